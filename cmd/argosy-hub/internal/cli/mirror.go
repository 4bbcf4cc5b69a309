package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/cmd/internal/kubeconf"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/mirror"
	"github.com/argosyproj/argosy/internal/httpserve"
	"github.com/argosyproj/argosy/internal/telemetry"
	"github.com/argosyproj/argosy/internal/version"
)

// MirrorOptions are the flags of `argosy-hub mirror`.
type MirrorOptions struct {
	IO          cmdkit.IOStreams
	HubURL      string
	HubCA       string
	TokenFile   string
	Kubeconfig  string
	Prefix      string
	Interval    time.Duration
	Concurrency int
	MetricsAddr string
	// Admission serves the webhook that relays changes made in the
	// mirror cluster to the hub (off when empty).
	Admission    string
	AdmissionTLS [2]string
	Self         string
	AppNamespace string
	// UIProxy serves Argo CD's API server with the live calls about
	// mirrored Applications answered by their clusters (off when empty).
	UIProxy    string
	UIProxyTLS [2]string
	ArgoCD     string
	ArgoCDCA   string
}

// BindFlags adds the mirror's flags to fs.
func (o *MirrorOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.HubURL, "hub-url", cmdkit.Env("ARGOSY_HUB_URL", ""), "the hub's API, whose views the mirror reads (env ARGOSY_HUB_URL)")
	fs.StringVar(&o.HubCA, "hub-ca", cmdkit.Env("ARGOSY_HUB_CA", ""),
		"PEM bundle of CA certificates trusted for an https --hub-url in addition to the system's (env ARGOSY_HUB_CA)")
	fs.StringVar(&o.TokenFile, "token-file", cmdkit.Env("ARGOSY_TOKEN_FILE", ""),
		"file holding the mirror's bearer token for the hub; a viewer's is enough, as the mirror only reads (env ARGOSY_TOKEN_FILE)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", cmdkit.Env("KUBECONFIG", ""),
		"kubeconfig of the mirror cluster, where Argo CD shows the fleet; empty means in-cluster config (env KUBECONFIG)")
	fs.StringVar(&o.Prefix, "namespace-prefix", cmdkit.Env("ARGOSY_MIRROR_NAMESPACE_PREFIX", ""),
		"prefix of each cluster's namespace; empty names it after the cluster (env ARGOSY_MIRROR_NAMESPACE_PREFIX)")
	fs.DurationVar(&o.Interval, "interval", 5*time.Second, "time between two rounds over the fleet")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "clusters a round mirrors at once")
	fs.StringVar(&o.MetricsAddr, "metrics-address", cmdkit.Env("ARGOSY_METRICS_ADDRESS", "127.0.0.1:9467"),
		"address of /metrics and /healthz (env ARGOSY_METRICS_ADDRESS)")
	fs.StringVar(&o.Admission, "admission-address", cmdkit.Env("ARGOSY_MIRROR_ADMISSION_ADDRESS", ""),
		"address of the admission webhook that relays changes made to mirrored Applications to the hub, over TLS; empty: none "+
			"(env ARGOSY_MIRROR_ADMISSION_ADDRESS)")
	fs.StringVar(&o.AdmissionTLS[0], "admission-tls-cert", cmdkit.Env("ARGOSY_MIRROR_ADMISSION_TLS_CERT", ""),
		"the webhook's certificate (PEM), read again when it changes (env ARGOSY_MIRROR_ADMISSION_TLS_CERT)")
	fs.StringVar(&o.AdmissionTLS[1], "admission-tls-key", cmdkit.Env("ARGOSY_MIRROR_ADMISSION_TLS_KEY", ""),
		"the webhook's private key (PEM) (env ARGOSY_MIRROR_ADMISSION_TLS_KEY)")
	fs.StringVar(&o.Self, "mirror-user", cmdkit.Env("ARGOSY_MIRROR_USER", ""),
		"the Kubernetes user the mirror writes as (system:serviceaccount:NS:NAME), whose writes the webhook admits as they are "+
			"(env ARGOSY_MIRROR_USER)")
	fs.StringVar(&o.AppNamespace, "application-namespace", "argocd",
		"the namespace, on its cluster, of an Application created in the mirror cluster")
	fs.StringVar(&o.UIProxy, "ui-proxy-address", cmdkit.Env("ARGOSY_MIRROR_UI_PROXY_ADDRESS", ""),
		"address of a proxy of --argocd-server for its UI, which answers the resource tree, diff and live manifests of mirrored "+
			"Applications from their clusters; empty: none (env ARGOSY_MIRROR_UI_PROXY_ADDRESS)")
	fs.StringVar(&o.UIProxyTLS[0], "ui-proxy-tls-cert", cmdkit.Env("ARGOSY_MIRROR_UI_PROXY_TLS_CERT", ""),
		"the proxy's certificate (PEM); empty: plain HTTP, for a proxy behind an ingress that ends TLS (env ARGOSY_MIRROR_UI_PROXY_TLS_CERT)")
	fs.StringVar(&o.UIProxyTLS[1], "ui-proxy-tls-key", cmdkit.Env("ARGOSY_MIRROR_UI_PROXY_TLS_KEY", ""),
		"the proxy's private key (PEM) (env ARGOSY_MIRROR_UI_PROXY_TLS_KEY)")
	fs.StringVar(&o.ArgoCD, "argocd-server", cmdkit.Env("ARGOSY_MIRROR_ARGOCD_SERVER", ""),
		"URL of the mirror cluster's Argo CD API server, which the proxy stands in front of (env ARGOSY_MIRROR_ARGOCD_SERVER)")
	fs.StringVar(&o.ArgoCDCA, "argocd-server-ca", cmdkit.Env("ARGOSY_MIRROR_ARGOCD_SERVER_CA", ""),
		"PEM bundle of CA certificates trusted for an https --argocd-server besides the system's (env ARGOSY_MIRROR_ARGOCD_SERVER_CA)")
}

// NewCmdMirror returns `argosy-hub mirror`.
func NewCmdMirror(io cmdkit.IOStreams, runF func(context.Context, *MirrorOptions) error) *cobra.Command {
	opts := &MirrorOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Keep the fleet's Applications in a Kubernetes cluster that runs a stock Argo CD",
		Long: `mirror keeps, in the cluster --kubeconfig names (the mirror cluster), one
namespace per workload cluster holding an Application for each Application
the cluster runs: the spec the hub wants (or, for an Application the
cluster owns in autonomous mode, the spec it published, annotated
argosy.dev/owner=spoke) and the status its agent reported: sync, health,
operation state, conditions and history. Argo CD's UI, API server and CLI
on the mirror cluster then show the whole fleet.

It reads the hub's views through its API with --token-file (a viewer's token
is enough) and writes only to the mirror cluster: it appends no event and
holds no credentials to a workload cluster. Every Application it writes
carries argocd.argoproj.io/skip-reconcile=true, so the mirror cluster's
application controller never syncs or prunes it. Run one mirror per mirror
cluster.

With --admission-address, it also serves a mutating admission webhook on the
mirror cluster's Applications: a change made to a mirrored Application in
that cluster's Argo CD (UI, argocd CLI) or with kubectl (an edit of the
spec, a sync, refresh, rollback, terminate or delete, a new Application)
becomes the matching hub call, made for the Kubernetes user who made it.
The token must then have actFor grants, which give each user a role; a
change the hub refuses is refused at admission, with the hub's words, and
the mirror writes why on the object (a ChangeRefusedWarning condition, for
10 minutes). A sync or rollback is asked of the hub once the change is
stored, not at admission (where the hub is asked only whether it would
take it), so that it runs once however often the API server reviews the
change; the mirror then needs watch on Applications. The webhook marks it
on the object, signed with a key drawn from the token, and the mirror asks
for no mark it did not sign for that object: one pending when the token
changes is dropped, with a condition. Changes to the mirror's own labels
and annotations are refused (docs/mirror.md).

With --ui-proxy-address, it also serves a proxy of --argocd-server for its
UI and the argocd CLI (REST, gRPC over HTTP/2 and gRPC-Web): every call
goes on to the API server, but the resource tree, the diff (managed
resources), a live manifest and a Pod's logs of a mirrored Application,
which the API server would wait for from its controller, are asked of the
Application's cluster through the hub, once the API server showed the
caller the Application. A sync, rollback, terminate, delete, refresh, spec
edit or patch of a mirrored Application is made through the hub for the
Argo CD user of the caller's session, once the API server says its RBAC
allows it: the token needs actFor grants for Argo CD users
(argocd-user:NAME=ROLE, argocd-group:NAME=ROLE).`,
		Example: `  argosy-hub mirror --hub-url https://argosy.internal:8443 --token-file /etc/argosy/mirror-token \
    --namespace-prefix fleet-`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.HubURL == "" || opts.TokenFile == "" {
				return &cmdkit.FlagError{Err: errors.New("--hub-url and --token-file are required")}
			}
			if opts.Admission != "" && (opts.AdmissionTLS[0] == "" || opts.AdmissionTLS[1] == "" || opts.Self == "") {
				return &cmdkit.FlagError{Err: errors.New("--admission-address needs --admission-tls-cert, --admission-tls-key and --mirror-user")}
			}
			if opts.UIProxy != "" && opts.ArgoCD == "" {
				return &cmdkit.FlagError{Err: errors.New("--ui-proxy-address needs --argocd-server")}
			}
			if (opts.UIProxyTLS[0] == "") != (opts.UIProxyTLS[1] == "") {
				return &cmdkit.FlagError{Err: errors.New("--ui-proxy-tls-cert and --ui-proxy-tls-key go together")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runMirror(c.Context(), opts)
		},
	}
	opts.BindFlags(cmd.Flags())
	return cmd
}

// refusalsKept is how long a refused change's condition stays on its
// mirrored Application.
const refusalsKept = 10 * time.Minute

func runMirror(ctx context.Context, o *MirrorOptions) error {
	log := slog.New(slog.NewJSONHandler(o.IO.Err, nil))
	tel, err := telemetry.Setup(ctx, "argosy-mirror", version.Get().Version)
	if err != nil {
		return err
	}
	defer tel.ShutdownLogged(ctx, log)
	token, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return &cmdkit.FlagError{Err: fmt.Errorf("--token-file: %w", err)}
	}
	hc, err := cmdkit.CAClient(o.HubCA)
	if err != nil {
		return &cmdkit.FlagError{Err: fmt.Errorf("--hub-ca: %w", err)}
	}
	hubc, err := api.NewClient(o.HubURL, strings.TrimSpace(string(token)), hc)
	if err != nil {
		return &cmdkit.FlagError{Err: fmt.Errorf("--hub-url: %w", err)}
	}
	kube, err := kubeconf.Config(o.Kubeconfig, 50, 100)
	if err != nil {
		return err
	}
	// Why a change made there was refused, written on its object for a
	// while by the rounds.
	refusals := mirror.NewRefusals(refusalsKept)
	m, err := mirror.New(hubc, kube, mirror.WithNamespacePrefix(o.Prefix), mirror.WithInterval(o.Interval),
		mirror.WithConcurrency(o.Concurrency), mirror.WithLogger(log), mirror.WithRefusals(refusals))
	if err != nil {
		return &cmdkit.FlagError{Err: err}
	}
	log.InfoContext(ctx, "argosy-hub mirror started", "version", version.Get().Version, "hub", o.HubURL, "prefix", o.Prefix,
		"admission", o.Admission)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	g.Go(func() error { return httpserve.Run(gctx, o.MetricsAddr, tel.Handler()) })
	if o.Admission != "" {
		// The webhook signs the operations it marks for the Relay with a
		// key drawn from the mirror's token, which no one else holds.
		marks, err := mirror.NewMarkKey(bytes.TrimSpace(token))
		if err != nil {
			return &cmdkit.FlagError{Err: fmt.Errorf("--token-file: %w", err)}
		}
		adm, err := mirror.NewAdmission(hubc, o.Self, o.Prefix, mirror.WithApplicationNamespace(o.AppNamespace), mirror.WithAdmissionLogger(log),
			mirror.WithAdmissionRefusals(refusals), mirror.WithAdmissionMarkKey(marks))
		if err != nil {
			return &cmdkit.FlagError{Err: err}
		}
		cfg, err := tel.ServeTLS(o.AdmissionTLS[0], o.AdmissionTLS[1], "argosy.mirror.tls.reload_failures", log)
		if err != nil {
			return err
		}
		g.Go(func() error { return httpserve.Run(gctx, o.Admission, adm, httpserve.WithTLS(cfg)) })
		// The syncs and rollbacks the webhook admitted, asked of the hub
		// once their change is stored.
		relay, err := mirror.NewRelay(hubc, kube, o.Prefix, marks, mirror.WithRelayLogger(log), mirror.WithRelayRefusals(refusals))
		if err != nil {
			return &cmdkit.FlagError{Err: err}
		}
		g.Go(func() error { return relay.Run(gctx) })
	}
	if o.UIProxy != "" {
		ac, err := cmdkit.CAClient(o.ArgoCDCA)
		if err != nil {
			return &cmdkit.FlagError{Err: fmt.Errorf("--argocd-server-ca: %w", err)}
		}
		proxy, err := mirror.NewUIProxy(o.ArgoCD, ac, hubc, log, mirror.WithProxyRefusals(refusals),
			mirror.WithProxyNamespacePrefix(o.Prefix))
		if err != nil {
			return &cmdkit.FlagError{Err: err}
		}
		// The argocd CLI's gRPC is HTTP/2, in clear text without TLS.
		opts := []httpserve.Option{httpserve.WithUnencryptedHTTP2()}
		if o.UIProxyTLS[0] != "" {
			cfg, err := tel.ServeTLS(o.UIProxyTLS[0], o.UIProxyTLS[1], "argosy.mirror.ui_proxy.tls.reload_failures", log)
			if err != nil {
				return err
			}
			opts = append(opts, httpserve.WithTLS(cfg))
		}
		g.Go(func() error { return httpserve.Run(gctx, o.UIProxy, proxy, opts...) })
	}
	return g.Wait()
}
