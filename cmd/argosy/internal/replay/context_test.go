package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
)

// withContexts points the config file at a new one holding a context
// "dev" that names its log, current, and "prod" that does not.
func withContexts(t *testing.T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	t.Setenv(config.EnvConfig, path)
	t.Setenv("ARGOSY_CONTEXT", "")
	t.Setenv("ARGOSY_KAFKA_BROKERS", "")
	t.Setenv("ARGOSY_HUB_KEY", "")
	t.Setenv("ARGOSY_TOPIC_PREFIX", "")
	cfg := &config.Config{CurrentContext: "dev"}
	cfg.Set(config.Context{Name: "dev", Server: "http://127.0.0.1:8080", Log: &config.LogAccess{KafkaBrokers: "127.0.0.1:19092",
		TopicPrefix: "dev.", HubKey: "/data/hub.pub", AcceptCreateTime: true}})
	cfg.Set(config.Context{Name: "prod", Server: "https://hub.example.com"})
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
}

// TestLogFromContext: the replay commands and export take the log's
// broker, topic prefix, hub key and timestamps from the context when not
// given them, give way to flags and the environment, and say where the
// broker may come from when nothing names one.
func TestLogFromContext(t *testing.T) {
	withContexts(t)
	at := []string{"2026-01-02T03:04:05Z", "--cluster", "c"}
	got, err := cmdtest.Parse(t, NewCmdAsOf, at)
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Log; l.Kafka.Brokers != "127.0.0.1:19092" || l.TopicPrefix != "dev." || l.HubKeyFile != "/data/hub.pub" || !l.CreateTime {
		t.Errorf("as-of from the current context: %+v", l)
	}
	got, err = cmdtest.Parse(t, NewCmdAsOf, append(at, "--kafka-brokers", "kafka:9092", "--hub-key", "other.pub", "--topic-prefix", "x."))
	if err != nil {
		t.Fatal(err)
	}
	if l := got.Log; l.Kafka.Brokers != "kafka:9092" || l.TopicPrefix != "x." || l.HubKeyFile != "other.pub" {
		t.Errorf("flags must win over the context: %+v", l)
	}
	t.Setenv("ARGOSY_KAFKA_BROKERS", "env:9092")
	if got, err = cmdtest.Parse(t, NewCmdAsOf, at); err != nil || got.Log.Kafka.Brokers != "env:9092" {
		t.Errorf("the environment must win over the context: %v, %+v", err, got)
	}
	t.Setenv("ARGOSY_KAFKA_BROKERS", "")

	ex, err := cmdtest.Parse(t, NewCmdExport, []string{"--out", "-"})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Kafka.Brokers != "127.0.0.1:19092" || !strings.HasPrefix(ex.Range.Topics[0], "dev.") {
		t.Errorf("export from the current context: %q, %v", ex.Kafka.Brokers, ex.Range.Topics)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a context without a log", append(at, "--context", "prod"), "--kafka-brokers is required: give it, set ARGOSY_KAFKA_BROKERS, or use a context"},
		{"a context that is not there", append(at, "--context", "stage"), `--context "stage": no such context: known contexts are dev, prod`},
	} {
		_, err := cmdtest.Parse(t, NewCmdAsOf, tc.args)
		var fe *cmdkit.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.want)
		}
	}
	if _, err := cmdtest.Parse(t, NewCmdExport, []string{"--out", "-", "--context", "prod"}); err == nil || !strings.Contains(err.Error(), "use a context that names the log") {
		t.Errorf("export with a context without a log: %v", err)
	}
}

// TestMain keeps the tests off the config file of whoever runs them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "argosy-replay-test")
	if err != nil {
		panic(err)
	}
	if err := os.Setenv(config.EnvConfig, filepath.Join(dir, "config.yaml")); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
