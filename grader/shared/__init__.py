"""What the grader shares with the students' own tools (starter/tools/): the layer below every other."""
