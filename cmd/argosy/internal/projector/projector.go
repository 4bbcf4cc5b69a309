// Package projector is `argosy projector`: flags, then the store and a
// projector.Service over it, with the read API behind the hub's tokens
// when it is enabled, and the metrics endpoint, until it is stopped.
package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/httpserve"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	argosyprojector "github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// ProjectorOptions are the flags of `argosy projector`. Every flag falls
// back to an environment variable, named in its help.
type ProjectorOptions struct {
	IO          cmdkit.IOStreams
	Kafka       kafkaconn.Options
	Store       string
	TopicPrefix string
	Group       string
	HubKeyFile  string
	Listen      string
	Tokens      string
	// TLSCert and TLSKey, both or neither, serve the read API over TLS.
	TLSCert     string
	TLSKey      string
	MetricsAddr string
	MaxRecords  int
	ClockMargin time.Duration
}

// NewCmdProjector returns `argosy projector`.
func NewCmdProjector(io cmdkit.IOStreams, runF func(context.Context, *ProjectorOptions) error) *cobra.Command {
	opts := &ProjectorOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "projector",
		Short: "Fold the event log into fleet, audit and deployment views, and serve them",
		Long: `projector consumes the config, status, deployments and audit topics in a
consumer group and folds them, exactly once, into a store: an embedded
SQLite file by default, or PostgreSQL for several replicas.

With --listen it also serves the views as HTTP/JSON (the read API; see
/api/v1/openapi.yaml) behind the hub's tokens file (--tokens): the same
tokens, roles and scopes as the hub's read routes. Without --listen it
serves no read API; the hub serves the same views to its callers. With
--tls-cert and --tls-key the read API is served over TLS 1.2 or later,
and a renewed certificate is presented without a restart: the read API
carries bearer tokens, which are also the hub's.`,
		Example: `  # One replica with the embedded store
  argosy projector --kafka-brokers kafka:9092 --hub-key hub.pub --store sqlite:///var/lib/argosy/views.db

  # Replicas sharing the partitions over PostgreSQL
  ARGOSY_STORE=postgres://argosy@db:5432/argosy argosy projector --kafka-brokers kafka:9092 --hub-key hub.pub

  # Its own read API too, for the hub's tokens
  argosy projector --kafka-brokers kafka:9092 --hub-key hub.pub --listen 127.0.0.1:8080 --tokens tokens.yaml`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return &cmdkit.FlagError{Err: err}
			}
			if opts.Group == "" {
				opts.Group = events.ProjectorGroup(opts.TopicPrefix)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return projectorRun(c.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&opts.Store, "store", cmdkit.Env("ARGOSY_STORE", "sqlite://argosy-views.db"),
		"where the views live: sqlite://PATH or postgres://… (env ARGOSY_STORE)")
	fs.StringVar(&opts.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.StringVar(&opts.Group, "group", cmdkit.Env("ARGOSY_PROJECTOR_GROUP", ""),
		"consumer group the replicas share; empty: the topic prefix then "+argosyprojector.DefaultGroup+", the group the KafkaUser's ACLs grant (env ARGOSY_PROJECTOR_GROUP)")
	fs.StringVar(&opts.HubKeyFile, "hub-key", cmdkit.Env("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64: the trust anchor (env ARGOSY_HUB_KEY)")
	fs.StringVar(&opts.Listen, "listen", cmdkit.Env("ARGOSY_LISTEN", ""),
		"address of the read API, which needs --tokens; empty: no read API (env ARGOSY_LISTEN)")
	fs.StringVar(&opts.Tokens, "tokens", cmdkit.Env("ARGOSY_TOKENS", ""),
		"the hub's tokens file, re-read when it changes: who may call the read API, with what scope (env ARGOSY_TOKENS)")
	fs.StringVar(&opts.TLSCert, "tls-cert", cmdkit.Env("ARGOSY_TLS_CERT", ""),
		"PEM certificate (chain) of the read API, with --tls-key: it is then served over TLS 1.2 or later only, and the files are read again when they change (env ARGOSY_TLS_CERT)")
	fs.StringVar(&opts.TLSKey, "tls-key", cmdkit.Env("ARGOSY_TLS_KEY", ""), "PEM private key of --tls-cert (env ARGOSY_TLS_KEY)")
	fs.StringVar(&opts.MetricsAddr, "metrics-address", cmdkit.Env("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9465"), "address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
	fs.IntVar(&opts.MaxRecords, "max-records", cmdkit.EnvInt("ARGOSY_MAX_RECORDS", 10_000, 0), // malformed: 0, which Validate refuses
		"records folded per store transaction at most (env ARGOSY_MAX_RECORDS)")
	fs.DurationVar(&opts.ClockMargin, "clock-margin", cmdkit.EnvDuration("ARGOSY_CLOCK_MARGIN", 2*time.Second, 0), // malformed: 0, which Validate refuses
		"how far the Kafka brokers' clocks may be behind this host's: an event that names no trust offset is folded about this long after its append; "+
			"it is also part of judging a key revoked at the time of an event, so rebuilds need the same value; "+
			"lower it only as far as the clocks are known to keep (env ARGOSY_CLOCK_MARGIN)")
	return cmd
}

// Validate reports missing or malformed options, all at once.
func (o *ProjectorOptions) Validate() error {
	errs := []error{o.Kafka.Validate()}
	if o.HubKeyFile == "" {
		errs = append(errs, errors.New("--hub-key is required"))
	}
	if !strings.HasPrefix(o.Store, "sqlite://") && !sqlstore.IsPostgres(o.Store) {
		errs = append(errs, fmt.Errorf("--store %q: want sqlite://PATH or postgres://…", o.Store))
	}
	if o.ClockMargin <= 0 {
		errs = append(errs, errors.New("--clock-margin must be a positive duration"))
	}
	if o.MaxRecords <= 0 {
		errs = append(errs, errors.New("--max-records must be positive"))
	}
	switch {
	case o.Listen != "" && o.Tokens == "":
		errs = append(errs, errors.New("--listen serves the read API, which takes the hub's tokens: --tokens is required with it"))
	case o.Listen == "" && o.Tokens != "":
		errs = append(errs, errors.New("--tokens guards the read API, which only --listen serves: give both or neither"))
	}
	switch {
	case (o.TLSCert == "") != (o.TLSKey == ""):
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	case o.TLSCert != "" && o.Listen == "":
		errs = append(errs, errors.New("--tls-cert serves the read API over TLS, which only --listen serves"))
	}
	return errors.Join(errs...)
}

func projectorRun(ctx context.Context, o *ProjectorOptions) error {
	log := slog.New(slog.NewJSONHandler(o.IO.Err, nil)).With("component", "projector")
	tel, err := telemetry.Setup(ctx, "argosy-projector", version.Get().Version)
	if err != nil {
		return err
	}
	defer tel.ShutdownLogged(ctx, log)
	hub, err := events.LoadPublicKey(o.HubKeyFile)
	if err != nil {
		return err
	}
	store, err := sqlstore.Open(ctx, o.Store)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer store.Close()
	conn, err := o.Kafka.Opts()
	if err != nil {
		return err
	}
	opts := []argosyprojector.Option{argosyprojector.WithTopics(events.DefaultTopics(o.TopicPrefix)), argosyprojector.WithGroup(o.Group),
		argosyprojector.WithMaxRecords(o.MaxRecords), argosyprojector.WithClockMargin(o.ClockMargin), argosyprojector.WithClientOpts(tel.KafkaOpts),
		argosyprojector.WithLogger(log)}
	var authn *auth.Authenticator
	if o.Listen != "" {
		if authn, err = auth.Open(o.Tokens, auth.WithLogger(log)); err != nil {
			return err
		}
		opts = append(opts, argosyprojector.WithReadAPI(o.Listen, guard(authn, log, read.New(store))))
	}
	if o.TLSCert != "" {
		cfg, err := tel.ServeTLS(o.TLSCert, o.TLSKey, "argosy.projector.tls.reload_failures", log)
		if err != nil {
			return err
		}
		opts = append(opts, argosyprojector.WithReadAPITLS(cfg))
	}
	svc, err := argosyprojector.NewService(conn, withCrash(store), []events.Key{events.HubAnchor("hub", hub)}, opts...)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "argosy projector started", "version", version.Get().Version, "store", storeKind(o.Store), "listen", o.Listen, "tls", o.TLSCert != "")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return svc.Run(gctx) })
	if authn != nil {
		g.Go(func() error { return authn.Run(gctx) })
	}
	g.Go(func() error { return httpserve.Run(gctx, o.MetricsAddr, tel.Handler(svc.Ready, store.Ping)) })
	return g.Wait()
}

func storeKind(url string) string {
	kind, _, _ := strings.Cut(url, "://")
	return kind
}
