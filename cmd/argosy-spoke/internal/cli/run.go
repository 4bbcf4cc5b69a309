package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
)

// RunOptions are the flags of `argosy-spoke run`. Every flag falls back to an
// environment variable, named in its help.
type RunOptions struct {
	Cluster       string
	Kafka         kafkaconn.Options
	TopicPrefix   string
	Partition     int
	Kubeconfig    string
	ArgoNamespace string
	KeysDir       string
	HubKeyFile    string
	MetricsAddr   string
	Heartbeat     time.Duration
	Mode          string
	ArgoCDVersion string
}

// BindFlags binds the options to fs with environment fallbacks.
func (o *RunOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Cluster, "cluster", cmdkit.Env("ARGOSY_CLUSTER", ""), "this cluster's name (env ARGOSY_CLUSTER)")
	o.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&o.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.IntVar(&o.Partition, "partition", cmdkit.EnvInt("ARGOSY_PARTITION", -1, -2), // malformed: -2, which Validate refuses
		"config partition pinned for this cluster; -1 computes it from the cluster name (env ARGOSY_PARTITION)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", cmdkit.Env("KUBECONFIG", ""), "kubeconfig; empty means in-cluster config (env KUBECONFIG)")
	fs.StringVar(&o.ArgoNamespace, "argocd-namespace", cmdkit.Env("ARGOSY_ARGOCD_NAMESPACE", "argocd"), "namespace of the local Argo CD (env ARGOSY_ARGOCD_NAMESPACE)")
	fs.StringVar(&o.KeysDir, "keys-dir", cmdkit.Env("ARGOSY_KEYS_DIR", ""), "directory of this cluster's keys, from keygen (env ARGOSY_KEYS_DIR)")
	fs.StringVar(&o.HubKeyFile, "hub-key", cmdkit.Env("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64 (env ARGOSY_HUB_KEY)")
	fs.DurationVar(&o.Heartbeat, "heartbeat-interval", cmdkit.EnvDuration("ARGOSY_HEARTBEAT_INTERVAL", 30*time.Second, 0), // malformed: 0, which Validate refuses
		"time between heartbeats (env ARGOSY_HEARTBEAT_INTERVAL)")
	fs.StringVar(&o.Mode, "mode", cmdkit.Env("ARGOSY_MODE", spoke.ModeManaged),
		"managed: the hub is the source of truth and local edits to managed Applications are reverted; "+
			"autonomous: Applications created in the cluster are published to the hub and never overwritten (env ARGOSY_MODE)")
	fs.StringVar(&o.ArgoCDVersion, "argocd-version", cmdkit.Env("ARGOSY_ARGOCD_VERSION", ""),
		"version of the local Argo CD, reported in heartbeats (env ARGOSY_ARGOCD_VERSION)")
	fs.StringVar(&o.MetricsAddr, "metrics-address", cmdkit.Env("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9464"), "address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
}

// Validate reports missing or malformed options, all at once.
func (o *RunOptions) Validate() error {
	var errs []error
	if err := o.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct{ flag, value string }{
		{"--cluster", o.Cluster}, {"--keys-dir", o.KeysDir}, {"--hub-key", o.HubKeyFile},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.flag))
		}
	}
	if o.Heartbeat <= 0 {
		errs = append(errs, errors.New("--heartbeat-interval must be a positive duration"))
	}
	if err := spoke.ValidMode(o.Mode); err != nil {
		errs = append(errs, fmt.Errorf("--mode: %w", err))
	}
	if o.Partition < -1 {
		errs = append(errs, errors.New("--partition must be -1 or a partition number"))
	}
	return errors.Join(errs...)
}

// NewCmdRun returns `argosy-spoke run`.
func NewCmdRun(runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Apply this cluster's desired state from Kafka to the local Argo CD",
		Example: `  argosy-spoke run --cluster prod-eu-1 --kafka-brokers kafka:9092 \
    --keys-dir /etc/argosy/keys --hub-key /etc/argosy/hub.pub`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return run(c.Context(), opts)
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}

// run wires the spoke together and runs it until ctx ends.
func run(ctx context.Context, o *RunOptions) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("cluster", o.Cluster)
	tel, err := telemetry.Setup(ctx, "argosy-spoke", version.Get().Version)
	if err != nil {
		return err
	}
	defer func() {
		if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
			log.ErrorContext(ctx, "telemetry shutdown", "err", err)
		}
	}()
	conn, err := connect(ctx, o, tel)
	if err != nil {
		return err
	}
	defer conn.close()
	p, err := assemble(o, conn, log)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "argosy-spoke started", "version", version.Get().Version, "mode", o.Mode)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.heart.Run(gctx) })
	g.Go(func() error {
		if _, err := p.boot.Run(gctx); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		return p.reader.Run(gctx, crashAfter(p.applier.Handle))
	})
	g.Go(func() error { return p.recorder.Run(gctx) })
	g.Go(func() error { return p.guard.Run(gctx) })
	g.Go(func() error {
		return p.reporter.Run(gctx, spoke.Tee(kube.NewWatcher(p.dyn, o.ArgoNamespace), p.recorder.Observe, p.guard.Observe))
	})
	g.Go(func() error {
		if err := cmdkit.Serve(gctx, o.MetricsAddr, tel.Handler()); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		return nil
	})
	return g.Wait()
}

// conn is the spoke's Kafka clients.
type conn struct {
	opts       []kgo.Opt // connection options, for short-lived clients
	prod, read *kgo.Client
	topics     events.Topics
	configPart int32
}

func (c *conn) close() {
	c.prod.Close()
	c.read.Close()
}

// connect makes the producer and reader clients and checks that Kafka takes
// the credentials: franz-go retries refused ones quietly, so a ping says
// why at once.
func connect(ctx context.Context, o *RunOptions, tel *telemetry.Telemetry) (*conn, error) {
	opts, err := o.Kafka.Opts()
	if err != nil {
		return nil, err
	}
	c := &conn{opts: opts, topics: events.DefaultTopics(o.TopicPrefix)}
	if c.prod, err = kgo.NewClient(slices.Concat(events.ProducerOpts(nil), opts, tel.KafkaOpts("producer"))...); err != nil {
		return nil, err
	}
	if c.read, err = kgo.NewClient(slices.Concat(events.ReaderOpts(), opts, tel.KafkaOpts("reader"))...); err != nil {
		c.prod.Close()
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.read.Ping(pingCtx); err != nil {
		c.close()
		return nil, fmt.Errorf("kafka: %w", err)
	}
	if c.configPart, err = configPartition(ctx, o, c.read, c.topics); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// parts are the spoke's components.
type parts struct {
	dyn      dynamic.Interface
	applier  *spoke.Applier
	boot     *spoke.Bootstrap
	reader   *events.Reader
	reporter *spoke.Reporter
	recorder *spoke.Recorder
	guard    *spoke.Guard
	heart    *spoke.Heartbeater
}

func assemble(o *RunOptions, c *conn, log *slog.Logger) (*parts, error) {
	keys, err := spoke.LoadKeys(o.KeysDir)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	hub, err := events.LoadPublicKey(o.HubKeyFile)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamicClient(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	signer, err := events.NewSigner(keys.Signing)
	if err != nil {
		return nil, err
	}
	producer, err := events.NewProducer(c.prod, signer, c.topics)
	if err != nil {
		return nil, err
	}
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", hub))),
		events.WithTarget(o.Cluster), events.WithTopics(c.topics))
	if err != nil {
		return nil, err
	}
	state := kube.NewState(dyn, o.ArgoNamespace, "argosy-spoke-state")
	var argoOpts []kube.Option
	if o.Mode == spoke.ModeAutonomous {
		argoOpts = append(argoOpts, kube.KeepLocal())
	}
	argo, source, part := kube.New(dyn, argoOpts...), "//argosy.dev/spoke/"+o.Cluster, c.configPart
	p := &parts{dyn: dyn,
		applier:  &spoke.Applier{Cluster: o.Cluster, Source: source, ArgoCD: argo, State: state, Publish: producer, Sealing: keys.Sealing, Log: log},
		reporter: &spoke.Reporter{Cluster: o.Cluster, Source: source, Publish: producer, Log: log},
		recorder: &spoke.Recorder{Cluster: o.Cluster, Source: source, Publish: producer, Marks: state, Log: log},
		guard:    &spoke.Guard{Cluster: o.Cluster, Source: source, Mode: o.Mode, Revert: argo, State: state, Publish: producer, Log: log},
	}
	p.boot = &spoke.Bootstrap{Cluster: o.Cluster, Client: c.read, ConnOpts: c.opts, Topics: c.topics, Partition: part,
		Group: group(o.Cluster), Decoder: dec, State: state, Handle: p.applier.Handle, Log: log}
	p.heart = &spoke.Heartbeater{Cluster: o.Cluster, Source: source, AgentVersion: version.Get().Version, ArgoCDVersion: o.ArgoCDVersion, Mode: o.Mode,
		Interval: o.Heartbeat, Publish: producer, Counts: p.reporter.Counts, Log: log,
		Progress: progress(kadm.NewClient(c.read), group(o.Cluster), c.topics[events.TopicConfig], part)}
	p.reader, err = events.NewReader(c.read, dec, events.NewDeadLetter(c.read, c.topics[events.TopicDeadLetter]), log, events.ReaderConfig{
		Topic: c.topics[events.TopicConfig], Partitions: []int32{part}, Group: group(o.Cluster),
		Skip:       func(r *kgo.Record) bool { return string(r.Key) != o.Cluster },
		OnDataLoss: resync(o.Cluster, producer, log),
		OnRefused:  p.applier.Refused,
	})
	return p, err
}

// resync returns the data-loss alarm: config records were deleted before the
// spoke applied them, so it asks the hub to append the cluster's desired
// state again.
func resync(cluster string, p *events.Producer, log *slog.Logger) func(context.Context, *kgo.ErrDataLoss) {
	return func(ctx context.Context, l *kgo.ErrDataLoss) {
		log.ErrorContext(ctx, "config records lost before they were applied; asking for a resync", "from", l.ConsumedTo, "to", l.ResetTo)
		e, err := events.New("//argosy.dev/spoke/"+cluster, events.TypeResyncRequested, events.Subject{Cluster: cluster}.String(), cluster,
			schemas.ResyncRequested{Cluster: cluster, Reason: schemas.ResyncDataLoss, LastOffset: l.ConsumedTo - 1, FirstAvailable: l.ResetTo})
		if err == nil {
			_, err = p.Publish(ctx, e)
		}
		if err != nil {
			log.ErrorContext(ctx, "resync request not sent", "err", err)
		}
	}
}

// group is where the spoke commits its config offsets.
func group(cluster string) string { return "argosy-spoke." + cluster }

// configPartition is --partition, or the cluster's partition by the
// Kafka-compatible partitioner. A topic the broker does not know yet (it was
// just created, or Kafka is still starting) is waited for, up to a minute.
func configPartition(ctx context.Context, o *RunOptions, cl *kgo.Client, topics events.Topics) (int32, error) {
	if o.Partition >= 0 {
		return int32(o.Partition), nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		p, err := partitionOf(ctx, o, cl, topics)
		if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return p, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(wait):
		}
	}
}

func partitionOf(ctx context.Context, o *RunOptions, cl *kgo.Client, topics events.Topics) (int32, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topics[events.TopicConfig])
	if err != nil {
		return 0, fmt.Errorf("config topic: %w", err)
	}
	t, ok := td[topics[events.TopicConfig]]
	if !ok || len(t.Partitions) == 0 {
		t.Err = errors.Join(t.Err, kerr.UnknownTopicOrPartition)
	}
	if t.Err != nil {
		return 0, fmt.Errorf("config topic %s: %w", topics[events.TopicConfig], t.Err)
	}
	return events.NewPartitioner(nil).PartitionOf(o.Cluster, int32(len(t.Partitions))), nil
}

// progress reports the spoke's committed config offset and the records
// after it.
func progress(adm *kadm.Client, group, topic string, part int32) func(context.Context) (int64, int64, error) {
	return func(ctx context.Context) (int64, int64, error) {
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return 0, 0, err
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return 0, 0, err
		}
		end, ok := ends.Lookup(topic, part)
		if !ok || end.Err != nil {
			return 0, 0, errors.New("no end offset")
		}
		var next int64
		if c, ok := committed.Lookup(topic, part); ok && c.Err == nil && c.At >= 0 {
			next = c.At
		}
		return next, max(0, end.Offset-next), nil
	}
}

func dynamicClient(kubeconfig string) (dynamic.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	return dynamic.NewForConfig(cfg)
}
