/* A stand-in for `harness --serve` (no GPU), for the runner's and the sanitizer path's tests.
 *
 *   fake_harness MODE --serve
 *
 * Answers every request line with {"op": ..., "status": "ok", "nonce": ...}; "quit" ends it. MODE:
 *   plain     nothing else
 *   detach    on the first request, forks; the child starts a new session and forks again, and that
 *             grandchild sleeps for 1000 s holding every descriptor (stdout, stderr, and whatever a tool
 *             above it passed down): the detached background process of issue 21
 *   ticker    a background thread increments a counter in $HOME/ticks as fast as it can (a student's
 *             thread that would launch GPU work while the solution is being timed)
 *   slow-dot  takes 2 s over each request for the task dot (a kernel slow only under a tool)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long ticks = 0;

static void* ticker(void* arg) {
    (void)arg;
    char path[4096], fresh[4200];
    snprintf(path, sizeof path, "%s/ticks", getenv("HOME") ? getenv("HOME") : "/tmp");
    snprintf(fresh, sizeof fresh, "%s.new", path);
    for (;;) {
        ++ticks;
        if (ticks % 1000 == 0) {  /* written aside, then renamed: a reader never sees half a number */
            FILE* f = fopen(fresh, "w");
            if (f) { fprintf(f, "%lu\n", ticks); fclose(f); rename(fresh, path); }
        }
    }
    return NULL;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "plain";
    char line[65536];
    int first = 1;
    if (strcmp(mode, "ticker") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, ticker, NULL);
    }
    while (fgets(line, sizeof line, stdin)) {
        char op[64] = "?", nonce[64] = "";
        char* p = strstr(line, "\"op\": \"");
        if (p) sscanf(p + 7, "%63[^\"]", op);
        p = strstr(line, "\"nonce\": \"");
        if (p) sscanf(p + 10, "%63[^\"]", nonce);
        if (strcmp(op, "quit") == 0) return 0;
        if (first && strcmp(mode, "detach") == 0) {
            pid_t pid = fork();
            if (pid == 0) {
                setsid();
                if (fork() == 0) { sleep(1000); _exit(0); }
                _exit(0);
            }
            fprintf(stderr, "fork returned %d\n", (int)pid);
        }
        first = 0;
        if (strcmp(mode, "slow-dot") == 0 && strstr(line, "\"task\": \"dot\"")) sleep(2);
        printf("{\"op\": \"%s\", \"status\": \"ok\", \"nonce\": \"%s\", \"context_lost\": false}\n", op, nonce);
        fflush(stdout);
    }
    return 0;
}
