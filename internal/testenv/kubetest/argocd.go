package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// ArgoNamespace is where Argo CD's configuration and Applications live.
const ArgoNamespace = "argocd"

// Argo CD's resources.
var (
	ApplicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectGVR  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	crdGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// InstallArgoCDCRDs applies Argo CD's CRDs (server-side: the ApplicationSet
// CRD is too large for client-side apply) and waits until they are served.
func (e *Env) InstallArgoCDCRDs(ctx context.Context) error {
	return e.ApplyCRDs(ctx, e.Bin.ArgoCDCRDs)
}

// ApplyCRDs server-side applies every CRD manifest in dir and waits until
// each is established.
func (e *Env) ApplyCRDs(ctx context.Context, dir string) error {
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRD manifests in %s: %w", dir, errors.Join(err, os.ErrNotExist))
	}
	var names []string
	for _, f := range files {
		docs, err := readYAMLDocs(f)
		if err != nil {
			return err
		}
		for _, obj := range docs {
			if obj.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if err := apply(ctx, dyn.Resource(crdGVR), obj); err != nil {
				return fmt.Errorf("apply %s: %w", f, err)
			}
			names = append(names, obj.GetName())
		}
	}
	for _, n := range names {
		if err := waitEstablished(ctx, dyn, n); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "argosy-kubetest", Force: &force})
	return err
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %w", name, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StartArgoCD installs Argo CD's CRDs and configuration and starts redis,
// the repo-server and the application-controller. Once it has succeeded,
// further calls do nothing.
func (e *Env) StartArgoCD(ctx context.Context) error {
	e.argoMu.Lock()
	defer e.argoMu.Unlock()
	if e.argo {
		return nil
	}
	if err := e.InstallArgoCDCRDs(ctx); err != nil {
		return err
	}
	if err := e.argoConfig(ctx); err != nil {
		return err
	}
	ports, err := testproc.FreePorts(4)
	if err != nil {
		return err
	}
	redis, repo := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	if err := e.startRedis(ctx, ports[0]); err != nil {
		return err
	}
	env, err := e.argoEnv()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = e.startArgoProc(ctx, "argocd-repo-server", e.Bin.RepoServer, env, []string{
		"--port", strconv.Itoa(ports[1]), "--address", "127.0.0.1",
		"--metrics-port", strconv.Itoa(ports[2]), "--metrics-address", "127.0.0.1",
		"--redis", redis, "--disable-tls", "--revision-cache-expiration", "1s", "--loglevel", "warn",
	}, func(ctx context.Context) error { return dial(ctx, repo) })
	if err != nil {
		return err
	}
	// The controller's metrics listen on all interfaces: v2.14 has no flag
	// to change that.
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3])
	err = e.startArgoProc(ctx, "argocd-application-controller", e.Bin.ApplicationController, env, []string{
		"--redis", redis, "--repo-server", repo, "--repo-server-plaintext",
		"--metrics-port", strconv.Itoa(ports[3]), "--app-resync", appResync(), "--app-resync-jitter", "0",
		"--self-heal-timeout-seconds", "1", "--self-heal-backoff-timeout-seconds", "0",
		"--status-processors", "4", "--operation-processors", "2", "--loglevel", "warn",
		"--application-namespaces", MirrorNamespaces,
	}, func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, metrics, "") })
	if err != nil {
		return err
	}
	e.argo, e.redis, e.repo = true, redis, repo
	return nil
}

// StartArgoCDServer starts Argo CD's API server beside the controller
// (StartArgoCD first, which it calls), over plain HTTP on 127.0.0.1 with
// authentication off, serving the Applications of ArgoNamespace and of
// MirrorNamespaces, and returns its address (host:port). Its UI's assets
// are not built: the binary serves the API alone. Once it has succeeded,
// further calls return the same address.
func (e *Env) StartArgoCDServer(ctx context.Context) (string, error) {
	if err := e.StartArgoCD(ctx); err != nil {
		return "", err
	}
	e.argoMu.Lock()
	defer e.argoMu.Unlock()
	if e.server != "" {
		return e.server, nil
	}
	addr, err := e.startArgoServer(ctx, "argocd-server", "--disable-auth")
	if err != nil {
		return "", err
	}
	e.server = addr
	return addr, nil
}

// StartArgoCDUI starts another Argo CD API server, with authentication
// off, that serves Argo CD's web UI, and returns its address. The API
// server serves the index.html built into its binary, so this one is
// built again from Argo CD's module with assets (a build of the module's
// ui/ directory, ui/dist/app: index.html and its bundles) in place; the
// rest of the build comes from Go's build cache (about 15 s).
func (e *Env) StartArgoCDUI(ctx context.Context, assets string) (string, error) {
	if err := e.StartArgoCD(ctx); err != nil {
		return "", err
	}
	bin, err := buildArgoCDWithUI(ctx, assets, filepath.Join(e.Dir, "argocd-ui-"+randomSuffix(6)))
	if err != nil {
		return "", fmt.Errorf("build Argo CD with its UI: %w", err)
	}
	return e.startArgoServerOf(ctx, bin, "argocd-server-ui", "--disable-auth")
}

// startArgoServer starts an argocd-server process named name, with args
// after the environment's own, and returns its address.
func (e *Env) startArgoServer(ctx context.Context, name string, args ...string) (string, error) {
	// The multi-call binary runs what its name says.
	bin := filepath.Join(e.Dir, "argocd-server")
	if err := os.Symlink(e.Bin.ArgoCD, bin); err != nil && !os.IsExist(err) {
		return "", err
	}
	return e.startArgoServerOf(ctx, bin, name, args...)
}

// startArgoServerOf starts bin, an argocd-server, as process name.
func (e *Env) startArgoServerOf(ctx context.Context, bin, name string, args ...string) (string, error) {
	env, err := e.argoEnv()
	if err != nil {
		return "", err
	}
	ports, err := testproc.FreePorts(2)
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = e.startArgoProc(ctx, name, bin, env, append([]string{
		"--address", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports[1]),
		"--insecure", "--redis", e.redis, "--repo-server", e.repo, "--repo-server-plaintext",
		"--dex-server", "", "--application-namespaces", MirrorNamespaces, "--loglevel", "warn",
	}, args...), func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, "http://"+addr+"/healthz", "") })
	if err != nil {
		return "", err
	}
	return addr, nil
}

// MirrorNamespaces is the pattern of the namespaces, besides its own, whose
// Applications the test Argo CD's controller watches, as a mirror
// cluster's Argo CD watches the namespaces the mirror writes: a test of
// the mirror names its namespaces with the prefix "mirror-".
const MirrorNamespaces = "mirror-*"

// EnvAppResync names the variable that sets the test Argo CD's
// --app-resync, in seconds. Tests want 10 (the default here), so that
// Applications settle fast; a measurement of idle cost wants production's
// 180.
const EnvAppResync = "ARGOSY_KUBETEST_APP_RESYNC"

func appResync() string {
	if v := os.Getenv(EnvAppResync); v != "" {
		if _, err := strconv.Atoi(v); err == nil {
			return v
		}
	}
	return "10"
}

func (e *Env) startArgoProc(ctx context.Context, name, bin string, env, args []string, ready func(context.Context) error) error {
	p, err := testproc.Start(e.Dir, name, bin, args, env)
	if err != nil {
		return err
	}
	e.addProc(p)
	return p.WaitFor(ctx, ready)
}

// argoEnv is the environment of Argo CD's processes: the test apiserver as
// its in-cluster API, and every path it writes to inside e.Dir.
func (e *Env) argoEnv() ([]string, error) {
	data := filepath.Join(e.Dir, "argocd")
	for _, d := range []string{"tls", "ssh", "gpg", "tmp"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o700); err != nil {
			return nil, err
		}
	}
	// Argo CD finds its namespace in its kubeconfig's context.
	kubeconfig := filepath.Join(e.Dir, "argocd.kubeconfig")
	if err := writeKubeconfig(kubeconfig, e.URL, adminToken, ArgoNamespace); err != nil {
		return nil, err
	}
	return []string{"ARGOCD_GPG_ENABLED=false", "ARGOCD_FAKE_IN_CLUSTER=true", "KUBECONFIG=" + kubeconfig,
		// The repo-server's git asks for a repository's password through
		// GIT_ASKPASS=argocd, looked up on PATH (its image has it in
		// /usr/local/bin). Without it, private HTTP repositories fail to
		// fetch with "cannot run argocd".
		"PATH=" + filepath.Dir(e.Bin.ArgoCD) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(data, "tls"), "ARGOCD_SSH_DATA_PATH=" + filepath.Join(data, "ssh"),
		"ARGOCD_GNUPGHOME=" + filepath.Join(data, "gpg"), "HOME=" + data,
		// The repo-server's clones and its git credential socket default to
		// fixed paths in /tmp, which two environments would share.
		"TMPDIR=" + filepath.Join(data, "tmp"), "ARGOCD_ASK_PASS_SOCK=" + filepath.Join(data, "askpass.sock"),
	}, nil
}

func (e *Env) startRedis(ctx context.Context, port int) error {
	p, err := testproc.Start(e.Dir, "redis", "redis-server", []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
	}, nil)
	if err != nil {
		return fmt.Errorf("%w (install Debian's redis-server: make kube-tools does)", err)
	}
	e.addProc(p)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return p.WaitFor(ctx, func(ctx context.Context) error { return dial(ctx, fmt.Sprintf("127.0.0.1:%d", port)) })
}

func dial(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// argoConfig creates the argocd namespace, the ConfigMaps and Secret Argo
// CD reads, and the default AppProject (which argocd-server, not run here,
// would create).
func (e *Env) argoConfig(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return err
	}
	core := func(resource string) dynamic.ResourceInterface {
		return dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace(ArgoNamespace)
	}
	objs := []struct {
		ri  dynamic.ResourceInterface
		obj map[string]any
	}{
		{dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}),
			object("v1", "Namespace", "", ArgoNamespace, nil)},
		{core("configmaps"), object("v1", "ConfigMap", ArgoNamespace, "argocd-cm",
			nil)},
		{core("configmaps"), object("v1", "ConfigMap", ArgoNamespace, "argocd-rbac-cm", nil)},
		{core("configmaps"), object("v1", "ConfigMap", ArgoNamespace, "argocd-cmd-params-cm", nil)},
		{core("secrets"), object("v1", "Secret", ArgoNamespace, "argocd-secret",
			map[string]any{"stringData": map[string]any{"server.secretkey": randomSuffix(32)}})},
		{dyn.Resource(AppProjectGVR).Namespace(ArgoNamespace), object("argoproj.io/v1alpha1", "AppProject", ArgoNamespace, "default",
			map[string]any{"spec": map[string]any{
				// Applications of the mirror's namespaces are this
				// project's too, as a mirror cluster's AppProjects must say.
				"sourceNamespaces":         []any{MirrorNamespaces},
				"sourceRepos":              []any{"*"},
				"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
				"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			}})},
	}
	for _, o := range objs {
		if _, err := o.ri.Create(ctx, &unstructured.Unstructured{Object: o.obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.obj["kind"], o.obj["metadata"].(map[string]any)["name"], err)
		}
	}
	return nil
}

// object returns an unstructured object with extra top-level fields. It
// carries the app.kubernetes.io/part-of=argocd label, without which Argo CD's
// settings informers do not see its ConfigMaps and Secrets.
func object(apiVersion, kind, ns, name string, extra map[string]any) map[string]any {
	meta := map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/part-of": "argocd"}}
	if ns != "" {
		meta["namespace"] = ns
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// readYAMLDocs reads the objects of a multi-document YAML file.
func readYAMLDocs(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := ParseYAML(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// ParseYAML returns the objects of a multi-document YAML (or JSON) stream;
// empty documents are skipped.
func ParseYAML(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// EnvStrimziCRDs names the directory holding Strimzi's CRD manifests (as
// published with Strimzi 1.2.0's release). They are not a Go module, so the
// project does not carry them; .ci/run and the Makefile point this at the
// copy beside the repository when there is one.
const EnvStrimziCRDs = "ARGOSY_STRIMZI_CRDS"

// InstallStrimziCRDs applies Strimzi's CRDs from $ARGOSY_STRIMZI_CRDS.
func (e *Env) InstallStrimziCRDs(ctx context.Context) error {
	dir := os.Getenv(EnvStrimziCRDs)
	if dir == "" {
		return fmt.Errorf("%s is not set: point it at a directory with Strimzi 1.2.0's CRD manifests (packaging/install/cluster-operator/*-Crd-*.yaml)", EnvStrimziCRDs)
	}
	if err := e.ApplyCRDs(ctx, dir); err != nil {
		return fmt.Errorf("%s=%s: %w (point it at Strimzi 1.2.0's CRD manifests)", EnvStrimziCRDs, dir, err)
	}
	return nil
}

// ApplyFile server-side applies every object of a multi-document YAML file
// as the administrator, and returns them.
func (e *Env) ApplyFile(ctx context.Context, path string) ([]*unstructured.Unstructured, error) {
	objs, err := readYAMLDocs(path)
	if err != nil {
		return nil, err
	}
	if err := e.ApplyObjects(ctx, "", objs...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// ApplyObjects server-side applies objs as the administrator, each
// namespaced one without a namespace into ns.
func (e *Env) ApplyObjects(ctx context.Context, ns string, objs ...*unstructured.Unstructured) error {
	return e.eachResource(ns, objs, func(ri dynamic.ResourceInterface, o *unstructured.Unstructured) error {
		return apply(ctx, ri, o)
	})
}

// DryRun server-side applies objs as the administrator without persisting
// them (dryRun=All) and with strict field validation, so that an unknown
// or misplaced field is an error, as are values the API's or a CRD's schema
// refuses. Namespaced objects without a namespace go into ns. It returns
// every object's error, each naming the object.
func (e *Env) DryRun(ctx context.Context, ns string, objs ...*unstructured.Unstructured) error {
	var errs []error
	err := e.eachResource(ns, objs, func(ri dynamic.ResourceInterface, o *unstructured.Unstructured) error {
		data, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		force := true
		_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: "argosy-kubetest", Force: &force, DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err))
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// eachResource calls f with each object and its resource client.
func (e *Env) eachResource(ns string, objs []*unstructured.Unstructured, f func(dynamic.ResourceInterface, *unstructured.Unstructured) error) error {
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(e.Admin)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: %w", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.GetNamespace() == "" {
				o.SetNamespace(ns)
			}
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if err := f(ri, o); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}
