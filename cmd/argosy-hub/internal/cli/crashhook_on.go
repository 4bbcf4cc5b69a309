//go:build argosy_testhooks

package cli

import (
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
)

// withCrash adds to the config writers' clients a hook that kills the
// process at the point EnvCrash names, if it names one.
func withCrash(f func(string) []kgo.Opt) func(string) []kgo.Opt {
	at := os.Getenv(EnvCrash)
	if at != "buffered" && at != "acked" {
		return f
	}
	return func(name string) []kgo.Opt {
		opts := f(name)
		if strings.HasPrefix(name, "hub-writer-") { // each lane's writer
			opts = append(slices.Clone(opts), kgo.WithHooks(crash{at: at}))
		}
		return opts
	}
}

// crash kills the process on the first config record.
type crash struct{ at string }

func (c crash) OnProduceRecordBuffered(r *kgo.Record) {
	if c.at == "buffered" && strings.HasSuffix(r.Topic, "argosy.config") {
		kill()
	}
}

func (c crash) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if c.at == "acked" && err == nil && strings.HasSuffix(r.Topic, "argosy.config") {
		kill()
	}
}

func kill() {
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err == nil {
		select {} // SIGKILL cannot be caught; this never returns
	}
}
