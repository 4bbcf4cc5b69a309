package replay

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/argosyproj/argosy/cmd/argosy/internal/apicmd"
	"github.com/argosyproj/argosy/cmd/argosy/internal/config"
	"github.com/argosyproj/argosy/internal/kafkaconn"
)

// logSettings are the settings of a command that reads the log directly
// which a context may give: nil for one the command does not take.
type logSettings struct {
	kafka      *kafkaconn.Options
	prefix     *string
	hubKey     *string
	createTime *bool
}

// bindContext adds --context to fs unless the command has it already (the
// commands that also call the hub do).
func bindContext(fs *pflag.FlagSet) {
	if fs.Lookup("context") == nil {
		fs.String("context", "", "context of the argosy config file whose log to read (default $"+apicmd.EnvContext+
			", else the current context)")
	}
}

// fromContext fills the settings fs was not given, by flag or environment,
// from the context --context or $ARGOSY_CONTEXT names, else the current
// one, when that context says how to read its log (argosy dev's does).
// A context that is named and not there is an error; no config file, or a
// context that says nothing of the log, changes nothing.
func fromContext(fs *pflag.FlagSet, s logSettings) error {
	name := os.Getenv(apicmd.EnvContext)
	if f := fs.Lookup("context"); f != nil && f.Changed {
		name = f.Value.String()
	}
	path, err := config.Path()
	if err != nil {
		return nil //nolint:nilerr // no config directory: no context to take from
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	x := cfg.Find(name)
	if name == "" {
		if x, err = cfg.Current(); err != nil {
			return err
		}
	} else if x == nil {
		return fmt.Errorf("--context %q: no such context: %s", name, cfg.Known())
	}
	if x == nil || x.Log == nil {
		return nil
	}
	given := func(flag string) bool { f := fs.Lookup(flag); return f != nil && f.Changed }
	if s.kafka != nil && !given("kafka-brokers") && s.kafka.Brokers == "" {
		s.kafka.Brokers = x.Log.KafkaBrokers
	}
	if s.prefix != nil && !given("topic-prefix") && *s.prefix == "" {
		*s.prefix = x.Log.TopicPrefix
	}
	if s.hubKey != nil && !given("hub-key") && *s.hubKey == "" {
		*s.hubKey = x.Log.HubKey
	}
	if s.createTime != nil && !given("accept-create-time") {
		*s.createTime = *s.createTime || x.Log.AcceptCreateTime
	}
	return nil
}

// errNoBrokers says where the Kafka servers may come from.
var errNoBrokers = errors.New("--kafka-brokers is required: give it, set ARGOSY_KAFKA_BROKERS, or use a context that names the log " +
	"(argosy dev makes one; --context NAME or argosy context use NAME)")

// kafkaError is k.Validate's error with a missing --kafka-brokers told
// where to come from.
func kafkaError(k *kafkaconn.Options) error {
	err := k.Validate()
	if !errors.Is(err, kafkaconn.ErrNoBrokers) {
		return err
	}
	out := []error{errNoBrokers}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !errors.Is(e, kafkaconn.ErrNoBrokers) {
				out = append(out, e)
			}
		}
	}
	return errors.Join(out...)
}
