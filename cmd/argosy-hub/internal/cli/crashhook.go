package cli

// EnvCrash names a fault-injection setting for tests: "buffered" makes the
// process SIGKILL itself when its first config record is handed to the
// Kafka client (the write is decided, nothing is sent), "acked" when the
// broker has acknowledged it (it is in the log, its transaction not yet
// committed). Only a binary built with -tags argosy_testhooks reads it
// (crashhook_on.go); a production binary has no such hook and ignores the
// variable.
const EnvCrash = "ARGOSY_TEST_CRASH_HUB"
