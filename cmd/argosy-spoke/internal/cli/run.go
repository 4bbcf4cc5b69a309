package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argosyproj/argosy/events"
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
	Brokers       string
	TopicPrefix   string
	Partition     int
	Kubeconfig    string
	ArgoNamespace string
	KeysDir       string
	HubKeyFile    string
	MetricsAddr   string
	Heartbeat     time.Duration
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// BindFlags binds the options to fs with environment fallbacks.
func (o *RunOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Cluster, "cluster", env("ARGOSY_CLUSTER", ""), "this cluster's name (env ARGOSY_CLUSTER)")
	fs.StringVar(&o.Brokers, "kafka-brokers", env("ARGOSY_KAFKA_BROKERS", ""), "Kafka bootstrap servers, comma-separated (env ARGOSY_KAFKA_BROKERS)")
	fs.StringVar(&o.TopicPrefix, "topic-prefix", env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	part, err := strconv.Atoi(env("ARGOSY_PARTITION", "-1"))
	if err != nil {
		part = -2 // Validate reports it
	}
	fs.IntVar(&o.Partition, "partition", part, "config partition pinned for this cluster; -1 computes it from the cluster name (env ARGOSY_PARTITION)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", env("KUBECONFIG", ""), "kubeconfig; empty means in-cluster config (env KUBECONFIG)")
	fs.StringVar(&o.ArgoNamespace, "argocd-namespace", env("ARGOSY_ARGOCD_NAMESPACE", "argocd"), "namespace of the local Argo CD (env ARGOSY_ARGOCD_NAMESPACE)")
	fs.StringVar(&o.KeysDir, "keys-dir", env("ARGOSY_KEYS_DIR", ""), "directory of this cluster's keys, from keygen (env ARGOSY_KEYS_DIR)")
	fs.StringVar(&o.HubKeyFile, "hub-key", env("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64 (env ARGOSY_HUB_KEY)")
	hb, err := time.ParseDuration(env("ARGOSY_HEARTBEAT_INTERVAL", "30s"))
	if err != nil {
		hb = 0 // Validate reports it
	}
	fs.DurationVar(&o.Heartbeat, "heartbeat-interval", hb, "time between heartbeats (env ARGOSY_HEARTBEAT_INTERVAL)")
	fs.StringVar(&o.MetricsAddr, "metrics-address", env("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9464"), "address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
}

// Validate reports missing or malformed options, all at once.
func (o *RunOptions) Validate() error {
	var errs []error
	for _, f := range []struct{ flag, value string }{
		{"--cluster", o.Cluster}, {"--kafka-brokers", o.Brokers}, {"--keys-dir", o.KeysDir}, {"--hub-key", o.HubKeyFile},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.flag))
		}
	}
	if o.Heartbeat <= 0 {
		errs = append(errs, errors.New("--heartbeat-interval must be a positive duration"))
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
	keys, err := spoke.LoadKeys(o.KeysDir)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	hub, err := readHubKey(o.HubKeyFile)
	if err != nil {
		return err
	}
	dyn, err := dynamicClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	topics := events.DefaultTopics(o.TopicPrefix)
	seeds := kgo.SeedBrokers(strings.Split(o.Brokers, ",")...)
	prodClient, err := kgo.NewClient(append(append(events.ProducerOpts(nil), seeds), tel.KafkaOpts("producer")...)...)
	if err != nil {
		return err
	}
	defer prodClient.Close()
	readClient, err := kgo.NewClient(append(append(events.ReaderOpts(), seeds), tel.KafkaOpts("reader")...)...)
	if err != nil {
		return err
	}
	defer readClient.Close()
	signer, err := events.NewSigner(keys.Signing)
	if err != nil {
		return err
	}
	producer, err := events.NewProducer(prodClient, signer, topics)
	if err != nil {
		return err
	}
	part, err := configPartition(ctx, o, readClient, topics)
	if err != nil {
		return err
	}
	state := kube.NewState(dyn, o.ArgoNamespace, "argosy-spoke-state")
	applier := &spoke.Applier{Cluster: o.Cluster, Source: "//argosy.dev/spoke/" + o.Cluster, ArgoCD: kube.New(dyn),
		State: state, Publish: producer, Sealing: keys.Sealing, Log: log}
	reader, err := newReader(o, readClient, topics, part, hub, log, resync(o.Cluster, producer, log), applier.Refused)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "argosy-spoke started", "version", version.Get().Version)
	reporter := &spoke.Reporter{Cluster: o.Cluster, Source: applier.Source, Publish: producer, Log: log}
	recorder := &spoke.Recorder{Cluster: o.Cluster, Source: applier.Source, Publish: producer, Marks: state, Log: log}
	heart := &spoke.Heartbeater{Cluster: o.Cluster, Source: applier.Source, AgentVersion: version.Get().Version, Mode: "managed",
		Interval: o.Heartbeat, Publish: producer, Counts: reporter.Counts, Log: log,
		Progress: progress(kadm.NewClient(readClient), group(o.Cluster), topics[events.TopicConfig], part)}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return heart.Run(gctx) })
	g.Go(func() error { return reader.Run(gctx, applier.Handle) })
	g.Go(func() error { return recorder.Run(gctx) })
	g.Go(func() error {
		return reporter.Run(gctx, spoke.Tee(kube.NewWatcher(dyn, o.ArgoNamespace), recorder.Observe))
	})
	g.Go(func() error { return telemetry.Serve(gctx, o.MetricsAddr, tel.Handler()) })
	return g.Wait()
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
// Kafka-compatible partitioner.
func configPartition(ctx context.Context, o *RunOptions, cl *kgo.Client, topics events.Topics) (int32, error) {
	if o.Partition >= 0 {
		return int32(o.Partition), nil
	}
	td, err := kadm.NewClient(cl).ListTopics(ctx, topics[events.TopicConfig])
	if err != nil {
		return 0, fmt.Errorf("config topic: %w", err)
	}
	t, ok := td[topics[events.TopicConfig]]
	if !ok || t.Err != nil || len(t.Partitions) == 0 {
		return 0, fmt.Errorf("config topic %s: %w", topics[events.TopicConfig], errors.Join(t.Err, errors.New("not found")))
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

func newReader(o *RunOptions, cl *kgo.Client, topics events.Topics, part int32, hub ed25519.PublicKey, log *slog.Logger,
	onLoss func(context.Context, *kgo.ErrDataLoss), onRefused func(context.Context, *kgo.Record, error) error) (*events.Reader, error) {
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", hub))),
		events.WithTarget(o.Cluster), events.WithTopics(topics))
	if err != nil {
		return nil, err
	}
	return events.NewReader(cl, dec, events.NewDeadLetter(cl, topics[events.TopicDeadLetter]), log, events.ReaderConfig{
		Topic: topics[events.TopicConfig], Partitions: []int32{part}, Group: group(o.Cluster),
		Skip:       func(r *kgo.Record) bool { return string(r.Key) != o.Cluster },
		OnDataLoss: onLoss,
		OnRefused:  onRefused,
	})
}

func readHubKey(path string) (ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hub key: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("hub key %s: want a base64 Ed25519 public key: %w", path, errors.Join(err, errors.New("wrong size")))
	}
	return ed25519.PublicKey(b), nil
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
