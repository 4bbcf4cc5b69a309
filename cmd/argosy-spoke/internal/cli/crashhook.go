package cli

// EnvCrashAfterApplies names a fault-injection setting for tests: when it
// holds a number n, the process kills itself with SIGKILL right after its
// n-th config event was applied, recorded and acknowledged, and before the
// reader commits the offset: the worst moment to crash. Only a binary built
// with -tags argosy_testhooks reads it (crashhook_on.go); a production
// binary has no such hook and ignores the variable.
const EnvCrashAfterApplies = "ARGOSY_TEST_CRASH_AFTER_APPLIES"

// EnvCrashAfterOperations names a fault-injection setting for tests: when
// it holds a number n, the process kills itself with SIGKILL right after
// its n-th operation reached Argo CD, before the spoke records that it
// did. Like EnvCrashAfterApplies, only a test binary reads it.
const EnvCrashAfterOperations = "ARGOSY_TEST_CRASH_AFTER_OPERATIONS"
