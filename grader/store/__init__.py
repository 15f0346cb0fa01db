"""The grades store: SQLite, its numbered migrations; it saves and answers, and does no arithmetic."""
