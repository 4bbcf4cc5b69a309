package projector

// EnvCrashAtCommit names a fault-injection setting for tests: "before:N"
// or "after:N" makes the process SIGKILL itself right before, or right
// after, its N-th store commit. Only a binary built with
// -tags argosy_testhooks reads it (crashhook_on.go); a production binary has
// no such hook and ignores the variable.
const EnvCrashAtCommit = "ARGOSY_TEST_CRASH_AT_COMMIT"
