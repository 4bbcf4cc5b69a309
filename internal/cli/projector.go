package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// ProjectorOptions are the flags of `argosy projector`. Every flag falls
// back to an environment variable, named in its help.
type ProjectorOptions struct {
	IO          IOStreams
	Kafka       kafkaconn.Options
	Store       string
	TopicPrefix string
	Group       string
	HubKeyFile  string
	Listen      string
	MetricsAddr string
	MaxRecords  int
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// NewCmdProjector returns `argosy projector`.
func NewCmdProjector(io IOStreams, runF func(context.Context, *ProjectorOptions) error) *cobra.Command {
	opts := &ProjectorOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "projector",
		Short: "Fold the event log into fleet, audit and deployment views, and serve them",
		Long: `projector consumes the config, status, deployments and audit topics in a
consumer group and folds them, exactly once, into a store: an embedded
SQLite file by default, or PostgreSQL for several replicas. It serves the
views as HTTP/JSON (the read API; see /api/v1/openapi.yaml), which the
fleet, cluster, app, audit and report commands read.`,
		Example: `  # One replica with the embedded store
  argosy projector --kafka-brokers kafka:9092 --hub-key hub.pub --store sqlite:///var/lib/argosy/views.db

  # Replicas sharing the partitions over PostgreSQL
  ARGOSY_STORE=postgres://argosy@db:5432/argosy argosy projector --kafka-brokers kafka:9092 --hub-key hub.pub`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return &FlagError{Err: err}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return projectorRun(c.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&opts.Store, "store", envOr("ARGOSY_STORE", "sqlite://argosy-views.db"),
		"where the views live: sqlite://PATH or postgres://… (env ARGOSY_STORE)")
	fs.StringVar(&opts.TopicPrefix, "topic-prefix", envOr("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.StringVar(&opts.Group, "group", envOr("ARGOSY_PROJECTOR_GROUP", "argosy-projector"), "consumer group the replicas share (env ARGOSY_PROJECTOR_GROUP)")
	fs.StringVar(&opts.HubKeyFile, "hub-key", envOr("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64: the trust anchor (env ARGOSY_HUB_KEY)")
	fs.StringVar(&opts.Listen, "listen", envOr("ARGOSY_LISTEN", "127.0.0.1:8080"), "address of the read API (env ARGOSY_LISTEN)")
	fs.StringVar(&opts.MetricsAddr, "metrics-address", envOr("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9465"), "address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
	fs.IntVar(&opts.MaxRecords, "max-records", 10_000, "records folded per store transaction at most")
	return cmd
}

// Validate reports missing or malformed options, all at once.
func (o *ProjectorOptions) Validate() error {
	errs := []error{o.Kafka.Validate()}
	if o.HubKeyFile == "" {
		errs = append(errs, errors.New("--hub-key is required"))
	}
	if !strings.HasPrefix(o.Store, "sqlite://") && !strings.HasPrefix(o.Store, "postgres://") && !strings.HasPrefix(o.Store, "postgresql://") {
		errs = append(errs, fmt.Errorf("--store %q: want sqlite://PATH or postgres://…", o.Store))
	}
	if o.MaxRecords <= 0 {
		errs = append(errs, errors.New("--max-records must be positive"))
	}
	return errors.Join(errs...)
}

func openStore(ctx context.Context, url string) (*sqlstore.Store, error) {
	if path, ok := strings.CutPrefix(url, "sqlite://"); ok {
		return sqlstore.OpenSQLite(ctx, path)
	}
	return sqlstore.OpenPostgres(ctx, url)
}

func projectorRun(ctx context.Context, o *ProjectorOptions) error {
	log := slog.New(slog.NewJSONHandler(o.IO.Err, nil)).With("component", "projector")
	tel, err := telemetry.Setup(ctx, "argosy-projector", version.Get().Version)
	if err != nil {
		return err
	}
	defer func() {
		if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
			log.ErrorContext(ctx, "telemetry shutdown", "err", err)
		}
	}()
	hub, err := events.LoadPublicKey(o.HubKeyFile)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, o.Store)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer store.Close()
	conn, err := o.Kafka.Opts()
	if err != nil {
		return err
	}
	svc, err := projector.NewService(conn, withCrash(store, os.Getenv(EnvCrashAtCommit)), []events.Key{events.HubAnchor("hub", hub)},
		projector.WithTopics(events.DefaultTopics(o.TopicPrefix)), projector.WithGroup(o.Group), projector.WithMaxRecords(o.MaxRecords),
		projector.WithClientOpts(tel.KafkaOpts), projector.WithReadAPI(o.Listen, read.New(store)), projector.WithLogger(log))
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "argosy projector started", "version", version.Get().Version, "store", storeKind(o.Store), "listen", o.Listen)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return svc.Run(gctx) })
	g.Go(func() error { return telemetry.Serve(gctx, o.MetricsAddr, tel.Handler()) })
	return g.Wait()
}

func storeKind(url string) string {
	kind, _, _ := strings.Cut(url, "://")
	return kind
}

// EnvCrashAtCommit names a fault-injection setting for tests: "before:N"
// or "after:N" makes the process SIGKILL itself right before, or right
// after, its N-th store commit.
const EnvCrashAtCommit = "ARGOSY_TEST_CRASH_AT_COMMIT"

// crashingStore kills the process around a chosen commit.
type crashingStore struct {
	projector.Store
	before bool
	n      int
	count  atomic.Int64
}

func withCrash(s projector.Store, setting string) projector.Store {
	when, n, ok := strings.Cut(setting, ":")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count <= 0 || (when != "before" && when != "after") {
		return s
	}
	return &crashingStore{Store: s, before: when == "before", n: count}
}

func (c *crashingStore) Commit(ctx context.Context, b *projector.Batch) error {
	nth := c.count.Add(1) == int64(c.n)
	if nth && c.before {
		kill()
	}
	err := c.Store.Commit(ctx, b)
	if nth && !c.before && err == nil {
		kill()
	}
	return err
}

func kill() {
	if err := syscall.Kill(os.Getpid(), syscall.SIGKILL); err == nil {
		select {} // SIGKILL cannot be caught; this never returns
	}
}
