package projector

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// TestEveryFlagHasAnEnvFallback holds the promise of the command's help:
// every flag names the environment variable it falls back to, and the
// variable sets the flag's default. A malformed number is refused.
func TestEveryFlagHasAnEnvFallback(t *testing.T) {
	NewCmdProjector(cmdkit.IOStreams{}, nil).Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(f.Usage, "(env ARGOSY_") {
			t.Errorf("--%s names no environment variable: %q", f.Name, f.Usage)
		}
	})
	run := func(env map[string]string) (*ProjectorOptions, error) {
		for k, v := range env {
			t.Setenv(k, v)
		}
		var got *ProjectorOptions
		cmd := NewCmdProjector(cmdkit.IOStreams{}, func(_ context.Context, o *ProjectorOptions) error { got = o; return nil })
		cmd.SetArgs(nil)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		return got, cmd.Execute()
	}
	got, err := run(map[string]string{"ARGOSY_KAFKA_BROKERS": "127.0.0.1:9092", "ARGOSY_HUB_KEY": "hub.pub",
		"ARGOSY_MAX_RECORDS": "7", "ARGOSY_PROJECTOR_GROUP": "replicas", "ARGOSY_CLOCK_MARGIN": "50ms"})
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxRecords != 7 || got.Group != "replicas" || got.HubKeyFile != "hub.pub" || got.ClockMargin != 50*time.Millisecond {
		t.Errorf("options from the environment: %+v", got)
	}
	if _, err := run(map[string]string{"ARGOSY_MAX_RECORDS": "many"}); err == nil || !strings.Contains(err.Error(), "--max-records") {
		t.Errorf("ARGOSY_MAX_RECORDS=many: %v, want --max-records refused", err)
	}
	if _, err := run(map[string]string{"ARGOSY_MAX_RECORDS": "7", "ARGOSY_CLOCK_MARGIN": "0s"}); err == nil || !strings.Contains(err.Error(), "--clock-margin") {
		t.Errorf("ARGOSY_CLOCK_MARGIN=0s: %v, want --clock-margin refused", err)
	}
	if got, err := run(map[string]string{"ARGOSY_MAX_RECORDS": "7", "ARGOSY_CLOCK_MARGIN": "1s"}); err != nil || got.Listen != "" {
		t.Errorf("defaults: listen %q, %v; want no read API", got.Listen, err)
	}
	for _, env := range []map[string]string{{"ARGOSY_LISTEN": "127.0.0.1:8080"}, {"ARGOSY_LISTEN": "", "ARGOSY_TOKENS": "tokens.yaml"}} {
		if _, err := run(env); err == nil || !strings.Contains(err.Error(), "--tokens") {
			t.Errorf("%v: %v, want the read API without tokens (or tokens without it) refused", env, err)
		}
	}
	got, err = run(map[string]string{"ARGOSY_LISTEN": "127.0.0.1:8080", "ARGOSY_TOKENS": "tokens.yaml"})
	if err != nil || got.Listen != "127.0.0.1:8080" || got.Tokens != "tokens.yaml" {
		t.Errorf("the read API with tokens: %+v, %v", got, err)
	}
}

// TestGroupFollowsTheTopicPrefix: with no --group the replicas' group is
// the topic prefix's (events.ProjectorGroup), the one its KafkaUser may
// use; --group still overrides it.
func TestGroupFollowsTheTopicPrefix(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "argosy-projector"},
		{[]string{"--topic-prefix", "prod."}, "prod.argosy-projector"},
		{[]string{"--topic-prefix", "prod.", "--group", "mine"}, "mine"},
	} {
		var got string
		cmd := NewCmdProjector(cmdkit.IOStreams{}, func(_ context.Context, o *ProjectorOptions) error { got = o.Group; return nil })
		cmd.SetArgs(append([]string{"--kafka-brokers", "127.0.0.1:9092", "--hub-key", "hub.pub"}, c.args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil || got != c.want {
			t.Errorf("%v: group %q (%v), want %q", c.args, got, err, c.want)
		}
	}
}
