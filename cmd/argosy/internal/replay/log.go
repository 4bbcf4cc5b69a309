package replay

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/projector"
)

// LogOptions are the flags of the replay commands that read the log: the
// Kafka connection, the topics, and the trust anchor every record is
// judged against.
type LogOptions struct {
	Kafka       kafkaconn.Options
	TopicPrefix string
	HubKeyFile  string
	ClockMargin time.Duration
	// CreateTime accepts records stamped with CreateTime: argosy dev's
	// embedded broker stamps them so (docs/dev.md).
	CreateTime bool
	// flags are the command's, to tell what it was given from what a
	// context may give.
	flags *pflag.FlagSet
}

func (l *LogOptions) bind(fs *pflag.FlagSet) {
	l.flags = fs
	bindContext(fs)
	l.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&l.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.StringVar(&l.HubKeyFile, "hub-key", cmdkit.Env("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64: the trust anchor (env ARGOSY_HUB_KEY)")
	fs.DurationVar(&l.ClockMargin, "clock-margin", 2*time.Second,
		"how far the Kafka brokers' clocks may be behind this host's; use the projector's --clock-margin, since it is part of judging a key revoked at the time of an event")
	fs.BoolVar(&l.CreateTime, "accept-create-time", false, "accept records the broker did not stamp with LogAppendTime (argosy dev's embedded broker)")
}

// validate takes what the command was not given from its context, then
// checks the options.
func (l *LogOptions) validate() []error {
	if l.flags != nil {
		if err := fromContext(l.flags, logSettings{kafka: &l.Kafka, prefix: &l.TopicPrefix, hubKey: &l.HubKeyFile, createTime: &l.CreateTime}); err != nil {
			return []error{err}
		}
	}
	errs := []error{kafkaError(&l.Kafka)}
	if l.HubKeyFile == "" {
		errs = append(errs, errors.New("--hub-key is required: give it, set ARGOSY_HUB_KEY, or use a context that names the log"))
	}
	if l.ClockMargin <= 0 {
		errs = append(errs, errors.New("--clock-margin must be a positive duration"))
	}
	return errs
}

// reading is what a replay command needs to read the log: the
// connection, the trust anchors, and the projector's options.
type reading struct {
	conn    []kgo.Opt
	anchors []events.Key
	opts    []projector.Option
	tel     *telemetry.Telemetry
}

// open sets up telemetry and loads the connection and the hub's key. Close
// the result's telemetry with tel.ShutdownLogged.
func (l *LogOptions) open(ctx context.Context, log *slog.Logger) (*reading, error) {
	hub, err := events.LoadPublicKey(l.HubKeyFile)
	if err != nil {
		return nil, err
	}
	conn, err := l.Kafka.Opts()
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.Setup(ctx, "argosy-replay", version.Get().Version)
	if err != nil {
		return nil, err
	}
	opts := []projector.Option{projector.WithTopics(events.DefaultTopics(l.TopicPrefix)),
		projector.WithClockMargin(l.ClockMargin), projector.WithClientOpts(tel.KafkaOpts), projector.WithLogger(log)}
	if l.CreateTime {
		opts = append(opts, projector.WithDecoderOptions(events.AcceptCreateTime()))
	}
	return &reading{conn: conn, anchors: []events.Key{events.HubAnchor("hub", hub)}, opts: opts, tel: tel}, nil
}

// warnings logs warnings and worse to w: records refused on the way.
func warnings(io cmdkit.IOStreams) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
