package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/internal/kafkaconn"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/system"
)

// RunOptions are the flags of `argosy-hub run`. Every flag falls back to an
// environment variable, named in its help.
type RunOptions struct {
	IO          cmdkit.IOStreams
	Kafka       kafkaconn.Options
	TopicPrefix string
	HubKey      string
	NextHubKey  string
	Anchors     []string
	Tokens      string
	Listen      string
	// TLSCert and TLSKey, both or neither, serve the API over TLS.
	TLSCert     string
	TLSKey      string
	MetricsAddr string
	Store       string
	Fold        bool
	Group       string
	Window      time.Duration
	SigForm     string
	AuditReads  bool
	// UnauthRate and UnauthBurst limit calls without a valid credential
	// per source address.
	UnauthRate  float64
	UnauthBurst int
}

// BindFlags binds the options to fs with environment fallbacks.
func (o *RunOptions) BindFlags(fs *pflag.FlagSet) {
	o.Kafka.BindFlags(fs, "ARGOSY_")
	fs.StringVar(&o.TopicPrefix, "topic-prefix", cmdkit.Env("ARGOSY_TOPIC_PREFIX", ""), "prefix of Argosy's topic names (env ARGOSY_TOPIC_PREFIX)")
	fs.StringVar(&o.HubKey, "hub-key", cmdkit.Env("ARGOSY_HUB_PRIVATE_KEY", ""), "file holding the hub's Ed25519 signing key, from argosy-hub keygen (env ARGOSY_HUB_PRIVATE_KEY)")
	fs.StringVar(&o.NextHubKey, "next-hub-key", cmdkit.Env("ARGOSY_HUB_NEXT_PRIVATE_KEY", ""),
		"file of the key --hub-key is about to be rotated to: every event is signed by both until the rotation (argosy-hub rotate) (env ARGOSY_HUB_NEXT_PRIVATE_KEY)")
	fs.StringSliceVar(&o.Anchors, "trust-anchor", nil, "file of another hub public key to trust, such as the first key, before any rotation, that readers pin; repeatable")
	fs.StringVar(&o.Tokens, "tokens", cmdkit.Env("ARGOSY_TOKENS", ""),
		"the tokens file, from argosy-hub token new, with an optional oidc section; read again every second, so that a token removed or changed applies without a restart (env ARGOSY_TOKENS)")
	fs.StringVar(&o.Listen, "listen", cmdkit.Env("ARGOSY_LISTEN", "127.0.0.1:8080"), "address of the API (env ARGOSY_LISTEN)")
	fs.StringVar(&o.TLSCert, "tls-cert", cmdkit.Env("ARGOSY_TLS_CERT", ""),
		"PEM certificate (chain) of the API, with --tls-key: the API is then served over TLS 1.2 or later only, and the files are read again when they change, "+
			"so a renewed certificate is presented without a restart; /metrics and /healthz stay plain HTTP (env ARGOSY_TLS_CERT)")
	fs.StringVar(&o.TLSKey, "tls-key", cmdkit.Env("ARGOSY_TLS_KEY", ""), "PEM private key of --tls-cert (env ARGOSY_TLS_KEY)")
	fs.StringVar(&o.MetricsAddr, "metrics-address", cmdkit.Env("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9466"), "address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
	fs.StringVar(&o.Store, "store", cmdkit.Env("ARGOSY_STORE", ""),
		"the projector's store (sqlite://PATH or postgres://…), whose views the read routes and the web dashboard at / serve; empty: neither (env ARGOSY_STORE)")
	fs.BoolVar(&o.Fold, "fold", cmdkit.Env("ARGOSY_FOLD", "") == "true",
		"also run a projector replica in this process, folding into --store (env ARGOSY_FOLD=true)")
	fs.StringVar(&o.Group, "projector-group", cmdkit.Env("ARGOSY_PROJECTOR_GROUP", ""),
		"the projector replicas' consumer group, with --fold; empty: the topic prefix then "+projector.DefaultGroup+" (env ARGOSY_PROJECTOR_GROUP)")
	fs.DurationVar(&o.Window, "idempotency-window", cmdkit.EnvDuration("ARGOSY_IDEMPOTENCY_WINDOW", hub.DefaultIdempotencyWindow, 0), // malformed: 0, which Validate refuses
		"how long an Idempotency-Key is honoured; the hub reads this much of the config topic at start (env ARGOSY_IDEMPOTENCY_WINDOW)")
	fs.StringVar(&o.SigForm, "sig-form", cmdkit.Env("ARGOSY_SIG_FORM", events.SigCompact.String()),
		"the form events are signed in: compact (ce_sig, the default) or dsse (ce_dssematerial and a dataschema on every event), for a fleet whose readers are upgraded after this writer; docs/design.md, Signatures (env ARGOSY_SIG_FORM)")
	fs.BoolVar(&o.AuditReads, "audit-reads", cmdkit.Env("ARGOSY_AUDIT_READS", "true") != "false", "audit read calls too, not only writes and denials (env ARGOSY_AUDIT_READS)")
	fs.Float64Var(&o.UnauthRate, "unauthenticated-rate", hub.DefaultUnauthenticatedRate,
		"calls a second one address may make without a valid credential, after --unauthenticated-burst; they are counted, not audited")
	fs.IntVar(&o.UnauthBurst, "unauthenticated-burst", hub.DefaultUnauthenticatedBurst, "calls one address may make at once without a valid credential")
}

// Validate reports missing or malformed options, all at once.
func (o *RunOptions) Validate() error {
	errs := []error{o.Kafka.Validate()}
	for _, f := range []struct{ flag, value string }{{"--hub-key", o.HubKey}, {"--tokens", o.Tokens}, {"--listen", o.Listen}} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.flag))
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if o.Store != "" && !strings.HasPrefix(o.Store, "sqlite://") && !sqlstore.IsPostgres(o.Store) {
		errs = append(errs, fmt.Errorf("--store %q: want sqlite://PATH or postgres://…", o.Store))
	}
	if o.Fold && o.Store == "" {
		errs = append(errs, errors.New("--fold needs --store"))
	}
	if o.Window <= 0 {
		errs = append(errs, errors.New("--idempotency-window must be a positive duration"))
	}
	if _, err := events.ParseSigForm(o.SigForm); err != nil {
		errs = append(errs, fmt.Errorf("--sig-form: %w", err))
	}
	if o.UnauthRate <= 0 || o.UnauthBurst <= 0 {
		errs = append(errs, errors.New("--unauthenticated-rate and --unauthenticated-burst must be positive"))
	}
	return errors.Join(errs...)
}

// NewCmdRun returns `argosy-hub run`.
func NewCmdRun(io cmdkit.IOStreams, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Serve the hub's API until stopped",
		Long: `run serves the API (docs/hub.md; the document is at /openapi.json). Every
write is validated, authorized, signed with --hub-key and appended to Kafka
with its audit record before it is answered. With --store the read routes
(fleet, applications, audit, deployments, reports) serve the projector's
views; with --fold this process also folds the log into that store.

Callers present a bearer token from the tokens file (--tokens), or, if its
oidc section names an OpenID Connect issuer, an ID token from that issuer,
whose groups map to roles (docs/hub.md#authentication-and-authorization):

  oidc:
    issuer: https://idp.example.com
    clientID: argosy
    groups:
    - {group: platform, role: admin}
    - {group: team-a, role: deployer, projects: [team-a], clusters: "env=staging"}

The hub reads the file again every second: a token added, removed or
given another role or scope, and the oidc section's groups, apply within
seconds to calls and to the dashboard's sessions, without a restart.

With --tls-cert and --tls-key the API is served over TLS (1.2 or later)
only. Both files are read again, at most once a second, when a handshake
comes: a certificate renewed in place (cert-manager, a Secret the kubelet
updates) is presented without a restart, and a new pair that does not load
is logged and the last good one kept.`,
		Example: `  argosy-hub keygen --dir ./hub
  argosy-hub token new admin --role admin --file ./hub/tokens.yaml
  argosy-hub run --kafka-brokers kafka:9092 --hub-key ./hub/hub.key --tokens ./hub/tokens.yaml \
    --store sqlite://views.db --fold
  argosy-hub run --kafka-brokers kafka:9092 --hub-key ./hub/hub.key --tokens ./hub/tokens.yaml \
    --listen 0.0.0.0:8443 --tls-cert /etc/argosy/tls/tls.crt --tls-key /etc/argosy/tls/tls.key`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Group == "" {
				opts.Group = events.ProjectorGroup(opts.TopicPrefix)
			}
			if err := opts.Validate(); err != nil {
				return &cmdkit.FlagError{Err: err}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), opts)
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}

func runRun(ctx context.Context, o *RunOptions) error {
	log := slog.New(slog.NewJSONHandler(o.IO.Err, nil))
	tel, err := telemetry.Setup(ctx, "argosy-hub", version.Get().Version)
	if err != nil {
		return err
	}
	defer tel.ShutdownLogged(ctx, log)
	signer, anchors, err := runKeys(o)
	if err != nil {
		return err
	}
	conn, err := o.Kafka.Opts()
	if err != nil {
		return err
	}
	form, err := events.ParseSigForm(o.SigForm)
	if err != nil {
		return err
	}
	opts := []system.Option{system.WithTopicPrefix(o.TopicPrefix), system.WithListen(o.Listen), system.WithLogger(log),
		system.WithTokenFile(o.Tokens), system.WithClientOpts(tel.KafkaOpts),
		system.WithOpsServer(o.MetricsAddr, func(ready system.Check) http.Handler { return tel.Handler(ready) }),
		system.WithHubOptions(hub.WithIdempotencyWindow(o.Window), hub.WithAuditReads(o.AuditReads), hub.WithSigForm(form),
			hub.WithUnauthenticatedLimit(o.UnauthRate, o.UnauthBurst), hub.WithClientOpts(withCrash(tel.KafkaOpts)))}
	if o.TLSCert != "" {
		// Read again when the files change; pairs that did not load are
		// counted in argosy.hub.tls.reload_failures.
		cfg, err := tel.ServeTLS(o.TLSCert, o.TLSKey, "argosy.hub.tls.reload_failures", log)
		if err != nil {
			return err
		}
		opts = append(opts, system.WithTLS(cfg))
	}
	if o.Store != "" {
		store, err := sqlstore.Open(ctx, o.Store)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		defer store.Close()
		opts = append(opts, system.WithStore(store), system.WithDashboard())
		if o.Fold {
			opts = append(opts, system.WithFold(o.Group))
		}
	}
	sys, err := system.New(conn, signer, anchors, opts...)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "argosy hub started", "component", "hub", "version", version.Get().Version, "listen", sys.Addr().String(),
		"tls", o.TLSCert != "", "key", signer.KeyID())
	return sys.Run(ctx)
}

// runKeys loads the hub's signing key (cosigned by --next-hub-key's while
// a rotation is under way) and the trust anchors: its own public key and
// every --trust-anchor.
func runKeys(o *RunOptions) (*events.Signer, []events.Key, error) {
	signer, err := LoadSigner(o.HubKey)
	if err != nil {
		return nil, nil, err
	}
	anchors := []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())}
	if o.NextHubKey != "" {
		next, err := LoadSigner(o.NextHubKey)
		if err != nil {
			return nil, nil, err
		}
		if signer, err = signer.Cosigner(next); err != nil {
			return nil, nil, fmt.Errorf("--next-hub-key: %w", err)
		}
	}
	for _, f := range o.Anchors {
		pub, err := events.LoadPublicKey(f)
		if err != nil {
			return nil, nil, err
		}
		anchors = append(anchors, events.HubAnchor(hub.HubKeyOwner, pub))
	}
	return signer, anchors, nil
}
