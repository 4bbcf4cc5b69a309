package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/cmd/internal/kubeconf"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/internal/httpserve"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/spoke"
	"github.com/argosyproj/argosy/spoke/kube"
	"github.com/argosyproj/argosy/spoke/live"
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
	Namespace     string
	KeysDir       string
	HubKeyFile    string
	MetricsAddr   string
	Heartbeat     time.Duration
	Mode          string
	ArgoCDVersion string
	ApplyBudget   time.Duration
	StatusResync  time.Duration
	OperationAge  time.Duration
	ClockMargin   time.Duration
	SigForm       string
	KubeQPS       float64
	KubeBurst     int
	Lease         string
	LeaseTiming   kube.LeaseTiming
	JoinToken     string
	HubURL        string
	// HubCA is a PEM bundle trusted for --hub-url besides the system's.
	HubCA string
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
	fs.StringVar(&o.Namespace, "namespace", cmdkit.Env("ARGOSY_NAMESPACE", "argosy-spoke"),
		"the spoke's own namespace, which holds its state (ConfigMaps) and its Lease; the spoke needs no ConfigMap in the Argo CD namespace (env ARGOSY_NAMESPACE)")
	fs.StringVar(&o.KeysDir, "keys-dir", cmdkit.Env("ARGOSY_KEYS_DIR", ""), "directory of this cluster's keys, from keygen (env ARGOSY_KEYS_DIR)")
	fs.StringVar(&o.HubKeyFile, "hub-key", cmdkit.Env("ARGOSY_HUB_KEY", ""), "file holding the hub's Ed25519 public key, base64: the trust anchor; keys it rotates to on the trust topic are followed (env ARGOSY_HUB_KEY)")
	fs.DurationVar(&o.Heartbeat, "heartbeat-interval", cmdkit.EnvDuration("ARGOSY_HEARTBEAT_INTERVAL", 30*time.Second, 0), // malformed: 0, which Validate refuses
		"time between heartbeats (env ARGOSY_HEARTBEAT_INTERVAL)")
	fs.StringVar(&o.Mode, "mode", cmdkit.Env("ARGOSY_MODE", spoke.ModeManaged),
		"managed: the hub is the source of truth and local edits to managed Applications are reverted; "+
			"autonomous: Applications created in the cluster are published to the hub and never overwritten (env ARGOSY_MODE)")
	fs.StringVar(&o.ArgoCDVersion, "argocd-version", cmdkit.Env("ARGOSY_ARGOCD_VERSION", ""),
		"version of the local Argo CD, reported in heartbeats (env ARGOSY_ARGOCD_VERSION)")
	fs.DurationVar(&o.ApplyBudget, "apply-retry-budget", cmdkit.EnvDuration("ARGOSY_APPLY_RETRY_BUDGET", 2*time.Minute, 0), // malformed: 0, which Validate refuses
		"how long one config event's apply is retried while the API server is busy or times out, before the event is rejected (env ARGOSY_APPLY_RETRY_BUDGET)")
	fs.DurationVar(&o.StatusResync, "status-resync", cmdkit.EnvDuration("ARGOSY_STATUS_RESYNC", time.Hour, 0), // malformed: 0, which Validate refuses
		"how often each Application's whole status is published again, besides its deltas; keep it well inside the status topic's retention (env ARGOSY_STATUS_RESYNC)")
	fs.DurationVar(&o.ClockMargin, "clock-margin", cmdkit.EnvDuration("ARGOSY_CLOCK_MARGIN", 2*time.Second, 0), // malformed: 0, which Validate refuses
		"how far the Kafka brokers' clocks may be behind this host's: a config event that names no trust offset is applied about this long after its append; "+
			"it is also part of judging a key revoked at the time of an event, so rebuilds need the same value; "+
			"lower it only as far as the clocks are known to keep (env ARGOSY_CLOCK_MARGIN)")
	fs.StringVar(&o.SigForm, "sig-form", cmdkit.Env("ARGOSY_SIG_FORM", events.SigCompact.String()),
		"the form events are signed in: compact (ce_sig, the default) or dsse (ce_dssematerial and a dataschema on every event), for a fleet whose readers are upgraded after this writer; docs/design.md, Signatures (env ARGOSY_SIG_FORM)")
	fs.DurationVar(&o.OperationAge, "operation-max-age", cmdkit.EnvDuration("ARGOSY_OPERATION_MAX_AGE", 10*time.Minute, 0), // malformed: 0, which Validate refuses
		"how long after it was asked for a sync or rollback may still start (earlier if the request says); one Argo CD has not taken by then is rejected as stale. The state remembers each operation until it expired (env ARGOSY_OPERATION_MAX_AGE)")
	fs.Float64Var(&o.KubeQPS, "kube-api-qps", cmdkit.EnvFloat("ARGOSY_KUBE_API_QPS", 50, 0), // malformed: 0, which Validate refuses
		"requests per second to the cluster's API server, sustained; each applied event takes about four (env ARGOSY_KUBE_API_QPS)")
	fs.IntVar(&o.KubeBurst, "kube-api-burst", cmdkit.EnvInt("ARGOSY_KUBE_API_BURST", 100, 0), // malformed: 0, which Validate refuses
		"requests to the cluster's API server allowed in a burst above --kube-api-qps (env ARGOSY_KUBE_API_BURST)")
	fs.StringVar(&o.Lease, "lease", cmdkit.Env("ARGOSY_LEASE", "argosy-spoke"),
		"Lease in the spoke's own namespace that makes one spoke process the cluster's only writer; the others wait for it. Empty: no Lease, for a spoke that is surely alone. deploy/rbac/spoke.yaml grants the Lease argosy-spoke only (env ARGOSY_LEASE)")
	d := kube.DefaultLeaseTiming
	fs.DurationVar(&o.LeaseTiming.Duration, "lease-duration", cmdkit.EnvDuration("ARGOSY_LEASE_DURATION", d.Duration, 0),
		"how long a waiting spoke waits after the holder's last renewal before it takes the Lease (env ARGOSY_LEASE_DURATION)")
	fs.DurationVar(&o.LeaseTiming.RenewDeadline, "lease-renew-deadline", cmdkit.EnvDuration("ARGOSY_LEASE_RENEW_DEADLINE", d.RenewDeadline, 0),
		"how long the holder tries to renew before it stops applying and exits; shorter than --lease-duration (env ARGOSY_LEASE_RENEW_DEADLINE)")
	fs.DurationVar(&o.LeaseTiming.RetryPeriod, "lease-retry-period", cmdkit.EnvDuration("ARGOSY_LEASE_RETRY_PERIOD", d.RetryPeriod, 0),
		"how often the holder renews and a waiting spoke tries (env ARGOSY_LEASE_RETRY_PERIOD)")
	fs.StringVar(&o.JoinToken, "join-token", cmdkit.Env("ARGOSY_JOIN_TOKEN", ""),
		"the one-time join token of this cluster's registration (argosy cluster register): on start, keys are made in --keys-dir if it has none, and registered with the hub at --hub-url (env ARGOSY_JOIN_TOKEN)")
	fs.StringVar(&o.HubURL, "hub-url", cmdkit.Env("ARGOSY_HUB_URL", ""), "the hub's API, for --join-token (env ARGOSY_HUB_URL)")
	fs.StringVar(&o.HubCA, "hub-ca", cmdkit.Env("ARGOSY_HUB_CA", ""),
		"PEM bundle of CA certificates trusted for an https --hub-url in addition to the system's, for a hub whose certificate a private CA signed (env ARGOSY_HUB_CA)")
	fs.StringVar(&o.MetricsAddr, "metrics-address", cmdkit.Env("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9464"), "address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
}

// Validate reports missing or malformed options, all at once.
func (o *RunOptions) Validate() error {
	var errs []error
	if err := o.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct{ flag, value string }{
		{"--cluster", o.Cluster}, {"--keys-dir", o.KeysDir}, {"--hub-key", o.HubKeyFile}, {"--namespace", o.Namespace},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.flag))
		}
	}
	if (o.JoinToken == "") != (o.HubURL == "") {
		errs = append(errs, errors.New("--join-token and --hub-url go together"))
	}
	if o.HubCA != "" && o.HubURL == "" {
		errs = append(errs, errors.New("--hub-ca needs --hub-url"))
	}
	if o.Heartbeat <= 0 {
		errs = append(errs, errors.New("--heartbeat-interval must be a positive duration"))
	}
	if o.ApplyBudget <= 0 {
		errs = append(errs, errors.New("--apply-retry-budget must be a positive duration"))
	}
	if o.StatusResync <= 0 {
		errs = append(errs, errors.New("--status-resync must be a positive duration"))
	}
	if o.ClockMargin <= 0 {
		errs = append(errs, errors.New("--clock-margin must be a positive duration"))
	}
	if o.OperationAge <= 0 {
		errs = append(errs, errors.New("--operation-max-age must be a positive duration"))
	}
	if _, err := events.ParseSigForm(o.SigForm); err != nil {
		errs = append(errs, fmt.Errorf("--sig-form: %w", err))
	}
	if err := spoke.ValidMode(o.Mode); err != nil {
		errs = append(errs, fmt.Errorf("--mode: %w", err))
	}
	if err := o.LeaseTiming.Validate(); o.Lease != "" && err != nil {
		errs = append(errs, fmt.Errorf("--lease-duration, --lease-renew-deadline, --lease-retry-period: %w", err))
	}
	if o.KubeQPS <= 0 || o.KubeBurst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
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

// run builds the agent from the options and runs it, with its metrics
// endpoint, until ctx ends.
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
	if o.JoinToken != "" {
		if err := join(ctx, o, log); err != nil {
			return err
		}
	}
	cfg, err := kubeconf.Config(o.Kubeconfig, float32(o.KubeQPS), o.KubeBurst)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	inspector, err := inspector(cfg, dyn, o.ArgoNamespace)
	if err != nil {
		return err
	}
	agent, err := o.agent(tel, log, dyn, inspector)
	if err != nil {
		return err
	}
	runAgent := agent.Run
	// A standby waiting for the Lease is ready: it is healthy and needs
	// nothing yet, and a rollout must be able to count it.
	ready := agent.Ready
	if o.Lease != "" {
		ready = func(ctx context.Context) error {
			if err := agent.Ready(ctx); !errors.Is(err, spoke.ErrNotRunning) {
				return err
			}
			return nil
		}
		lease, err := kube.NewLease(dyn, o.Namespace, o.Lease, holder(), o.LeaseTiming, log)
		if err != nil {
			return err
		}
		runAgent = func(ctx context.Context) error { return lease.Run(ctx, agent.Run) }
	}
	log.InfoContext(ctx, "argosy-spoke started", "version", version.Get().Version, "mode", o.Mode)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return runAgent(gctx) })
	g.Go(func() error { return httpserve.Run(gctx, o.MetricsAddr, tel.Handler(ready)) })
	return g.Wait()
}

// agent is the spoke.Agent the options describe, on the local cluster's
// API server.
func (o *RunOptions) agent(tel *telemetry.Telemetry, log *slog.Logger, dyn dynamic.Interface, inspector spoke.Inspector) (*spoke.Agent, error) {
	keys, err := spoke.LoadKeys(o.KeysDir)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	hub, err := events.LoadPublicKey(o.HubKeyFile)
	if err != nil {
		return nil, err
	}
	conn, err := o.Kafka.Opts()
	if err != nil {
		return nil, err
	}
	var argoOpts []argocd.Option
	if o.Mode == spoke.ModeAutonomous {
		argoOpts = append(argoOpts, argocd.KeepLocal())
	}
	client, err := argocd.New(dyn, spoke.FieldManager, argoOpts...)
	if err != nil {
		return nil, err
	}
	watcher, err := argocd.NewWatcher(dyn, o.ArgoNamespace)
	if err != nil {
		return nil, err
	}
	state, err := kube.NewState(dyn, o.Namespace, "argosy-spoke-state")
	if err != nil {
		return nil, err
	}
	form, err := events.ParseSigForm(o.SigForm)
	if err != nil {
		return nil, err
	}
	opts := append([]spoke.Option{spoke.WithTopics(events.DefaultTopics(o.TopicPrefix)), spoke.WithGroup(events.SpokeGroup(o.TopicPrefix, o.Cluster)),
		spoke.WithPartition(int32(o.Partition)),
		spoke.WithMode(o.Mode), spoke.WithHeartbeatInterval(o.Heartbeat), spoke.WithAgentVersion(version.Get().Version),
		spoke.WithArgoCDVersion(o.ArgoCDVersion), spoke.WithApplyBudget(o.ApplyBudget), spoke.WithStatusResync(o.StatusResync), spoke.WithOperationMaxAge(o.OperationAge), spoke.WithClockMargin(o.ClockMargin),
		spoke.WithSigForm(form), spoke.WithClientOpts(tel.KafkaOpts), spoke.WithLogger(log), spoke.WithInspector(inspector)}, crashHook()...)
	return spoke.New(o.Cluster, keys, hub, conn, crashArgo(client), watcher, state, opts...)
}

// holder names this process as a holder of the Lease: the host (the pod's
// name, in a cluster) and the process id.
func holder() string {
	host, err := os.Hostname()
	if err != nil {
		host = "argosy-spoke"
	}
	return fmt.Sprintf("%s_%d", host, os.Getpid())
}

// inspector answers the hub's live questions about the Applications of
// argoNamespace from the cluster's API.
func inspector(cfg *rest.Config, dyn dynamic.Interface, argoNamespace string) (spoke.Inspector, error) {
	logs, err := live.NewPodLogs(cfg)
	if err != nil {
		return nil, err
	}
	return live.New(dyn, logs, argoNamespace)
}
