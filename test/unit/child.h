/*
 * child.h - death tests and environment tests: a test program runs itself
 * again as `self CASE child`, in a child process whose stdout and stderr
 * it captures, with an extra environment entry if asked.
 *
 * A program with child cases declares each in one row of its table:
 * TEST_DEATH(name, child, call, message) for a death case (the child runs
 * `child` and must abort after one line naming call and message),
 * TEST_CHILD(name, child) for a case whose function `name` runs the child
 * itself (child_run(test_name(), ...)); main ends with child_main().
 *
 * Under a cross build's emulator (cmake/qemu-run.sh) the program is the
 * target's, which this machine cannot exec: the child runs under the
 * emulator named by TL_TEST_EMULATOR, and the line qemu adds to the
 * stderr of a child killed by a signal ("qemu: uncaught target signal
 * ...") is not the child's.
 */
#ifndef TL_TEST_CHILD_H
#define TL_TEST_CHILD_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char *child_self;

/* Read a pipe to its end into buf (NUL-terminated; what does not fit is
 * read and dropped, so the child never blocks on a full pipe). */
static inline void child_drain(int fd, char *buf, size_t size)
{
	char scratch[256];
	size_t n = 0;
	ssize_t r;
	for (;;) {
		if (buf != NULL && n < size - 1)
			r = read(fd, buf + n, size - 1 - n);
		else
			r = read(fd, scratch, sizeof(scratch));
		if (r <= 0)
			break;
		if (buf != NULL && n < size - 1)
			n += (size_t)r;
	}
	if (buf != NULL)
		buf[n] = '\0';
	close(fd);
}

/*
 * Run `self name child` with env (NAME=value, several separated by
 * spaces, or NULL) added; returns its
 * wait status.  out and err may be NULL.  stderr is read after stdout: the
 * children here write little to stdout.
 */
static inline int child_run(const char *name, const char *env, char *out,
		     size_t out_size, char *err, size_t err_size)
{
	int po[2], pe[2];
	CHECK(pipe(po) == 0 && pipe(pe) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		static char vars[512];	/* putenv keeps pointers into it */
		if (env != NULL) {
			CHECK(strlen(env) < sizeof(vars));
			strcpy(vars, env);
			for (char *v = vars, *end; *v != '\0'; v = end) {
				end = v + strcspn(v, " ");
				if (*end != '\0')
					*end++ = '\0';
				if (*v != '\0')
					putenv(v);
			}
		}
		const char *emulator = getenv("TL_TEST_EMULATOR");
		if (emulator != NULL)
			execl(emulator, emulator, child_self, name, "child",
			      (char *)NULL);
		else
			execl(child_self, child_self, name, "child",
			      (char *)NULL);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	child_drain(po[0], out, out_size);
	child_drain(pe[0], err, err_size);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return status;
}

/* Drop the emulator's own last line from a child's stderr (above). */
static inline void child_drop_emulator_line(char *err)
{
	static const char line[] = "qemu: uncaught target signal ";
	if (getenv("TL_TEST_EMULATOR") == NULL)
		return;
	char *at = strstr(err, line);
	if (at != NULL && (at == err || at[-1] == '\n') &&
	    strchr(at, '\n') == at + strlen(at) - 1)
		*at = '\0';
}

/*
 * The child dies by abort after exactly one line on stderr:
 * "tlmalloc: CALL(0x...): ... MESSAGE ...".  A minute at most: a hang
 * fails the test instead of stalling it.  env (NAME=value, or NULL) is
 * added to the child's environment.
 */
static inline void child_expect_abort_env(const char *name, const char *env,
					  const char *call, const char *message)
{
	char out[512], err[1024], head[64];
	alarm(60);
	int st = child_run(name, env, out, sizeof(out), err, sizeof(err));
	alarm(0);
	child_drop_emulator_line(err);
	CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
	       "status %d, stdout: %s stderr: %s", st, out, err);
	snprintf(head, sizeof(head), "tlmalloc: %s(0x", call);
	CHECKF(strncmp(err, head, strlen(head)) == 0, "stderr: %s", err);
	CHECKF(strstr(err, message) != NULL, "stderr: %s", err);
	char *nl = strchr(err, '\n');
	CHECKF(nl != NULL && nl[1] == '\0', "not one line: %s", err);
}

static inline void child_expect_abort(const char *name, const char *call,
				      const char *message)
{
	child_expect_abort_env(name, NULL, call, message);
}

/* A death case's test: its child, as its row says. */
static inline void child_expect_death(void)
{
	child_expect_abort(test_current->name, test_current->call,
			   test_current->message);
}

#define TEST_CHILD(name, child) { #name, name, child, NULL, NULL }
#define TEST_DEATH(name, child, call, message) \
	{ #name, child_expect_death, child, call, message }

static inline int child_main(int argc, char **argv,
			     const struct test_case *cases, size_t ncases)
{
	child_self = argv[0];
	return run_tests(cases, ncases, argc, argv);
}

#endif /* TL_TEST_CHILD_H */
