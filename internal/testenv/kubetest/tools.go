package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/argosyproj/argosy/internal/testenv/toolcache"
)

// The versions of the servers the tests run against, in one place. Each is
// built from its Go module in a tools module of its own, in the cache: Argo
// CD's dependency versions break an apiserver built beside them.
const (
	KubernetesVersion = "v1.34.4"
	EtcdVersion       = "v3.6.16"
	ArgoCDVersion     = "v2.14.21"
	// HelmVersion renders and lints the chart in deploy/helm. Helm's SDK
	// needs a newer client-go than Argo CD's, so it is a binary of its own.
	HelmVersion = "v3.22.0"
	// PrometheusOperatorVersion is the module whose ServiceMonitor and
	// PrometheusRule CRDs the chart's optional ServiceMonitors and alerts
	// are checked against.
	PrometheusOperatorVersion = "v0.85.0"
)

// Binaries are the paths of the built servers and of Argo CD's CRDs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Kubectl string
	// ArgoCD is the multi-call binary; its name decides what it runs, so
	// the application controller and repo-server are links to it.
	ArgoCD, ApplicationController, RepoServer string
	// ArgoCDCRDs is the directory of Argo CD's CRD manifests.
	ArgoCDCRDs string
	// Helm is the helm command.
	Helm string
	// MonitoringCRDs is the directory holding the prometheus-operator's
	// ServiceMonitor and PrometheusRule CRDs.
	MonitoringCRDs string
}

// recipeVersion changes whenever the way the tools are built changes (the
// packages, the flags), so that a changed recipe builds afresh.
const recipeVersion = "1"

// tool is one cache entry: what to build and the binaries it yields.
type tool struct {
	name  string
	build func(ctx context.Context, out string) error
	bins  []string
}

var tools = []tool{
	{"kubernetes-" + KubernetesVersion, buildKubernetes, []string{"kube-apiserver", "kube-controller-manager", "kubectl"}},
	{"etcd-" + EtcdVersion, buildEtcd, []string{"etcd"}},
	{"argocd-" + ArgoCDVersion, buildArgoCD, []string{"argocd", "argocd-application-controller", "argocd-repo-server"}},
	{"helm-" + HelmVersion, buildHelm, []string{"helm"}},
	// Named apart from the entry that held the ServiceMonitor CRD alone,
	// so that a cache made before the PrometheusRule CRD is made again.
	{"prometheus-operator-crds-" + PrometheusOperatorVersion, copyServiceMonitorCRD, nil},
}

// entryDir is where a tool is cached: its name, the recipe version and the
// Go toolchain that built it.
func entryDir(root string, t tool) string {
	return filepath.Join(root, "kube", fmt.Sprintf("%s-r%s-%s", t.name, recipeVersion, runtime.Version()))
}

// Build builds whatever is not cached yet and returns the binaries. progress
// receives one line per tool that has to be built (minutes each, cold).
func Build(ctx context.Context, progress io.Writer) (Binaries, error) {
	root, err := toolcache.Root()
	if err != nil {
		return Binaries{}, err
	}
	for _, t := range tools {
		err := toolcache.Ensure(ctx, entryDir(root, t), "bin", func(ctx context.Context, _, out string) error {
			fmt.Fprintf(progress, "kubetest: building %s (once per machine; minutes on a cold cache)\n", t.name)
			if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
				return err
			}
			return t.build(ctx, out)
		})
		if err != nil {
			return Binaries{}, fmt.Errorf("build %s: %w", t.name, err)
		}
	}
	return Locate()
}

// Locate returns the cached binaries, or an error that says to build them
// (make kube-tools) when any is missing.
func Locate() (Binaries, error) {
	root, err := toolcache.Root()
	if err != nil {
		return Binaries{}, err
	}
	bin := func(t tool, name string) string { return filepath.Join(entryDir(root, t), "bin", name) }
	kube, etcd, argo, helm, prom := tools[0], tools[1], tools[2], tools[3], tools[4]
	b := Binaries{
		APIServer: bin(kube, "kube-apiserver"), ControllerManager: bin(kube, "kube-controller-manager"), Kubectl: bin(kube, "kubectl"),
		Etcd:   bin(etcd, "etcd"),
		ArgoCD: bin(argo, "argocd"), ApplicationController: bin(argo, "argocd-application-controller"), RepoServer: bin(argo, "argocd-repo-server"),
		ArgoCDCRDs: filepath.Join(entryDir(root, argo), "crds"),
		Helm:       bin(helm, "helm"), MonitoringCRDs: filepath.Join(entryDir(root, prom), "crds"),
	}
	for _, t := range tools {
		for _, name := range t.bins {
			if _, err := os.Stat(bin(t, name)); err != nil {
				return Binaries{}, fmt.Errorf("%s is not built (%w): run `make kube-tools` (about 11 minutes on a cold machine)", name, err)
			}
		}
	}
	return b, nil
}

// goBuild writes a tools module requiring mod@version (plus replace lines)
// into dir and builds pkgs into dir/bin.
func goBuild(ctx context.Context, dir, mod, version string, replaces []string, ldflags string, pkgs ...string) error {
	var gomod bytes.Buffer
	fmt.Fprintf(&gomod, "module argosy.dev/tools/%s\n\ngo 1.24\n\nrequire %s %s\n", filepath.Base(dir), mod, version)
	if len(replaces) > 0 {
		fmt.Fprintf(&gomod, "\nreplace (\n\t%s\n)\n", strings.Join(replaces, "\n\t"))
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod.Bytes(), 0o644); err != nil {
		return err
	}
	for _, pkg := range pkgs {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags,
			"-o", filepath.Join(dir, "bin", filepath.Base(pkg)), pkg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0")
		if _, err := toolcache.Run(cmd); err != nil {
			return err
		}
	}
	return nil
}

// moduleFile returns the path of mod@version's go.mod and its directory in
// the module cache, downloading it if needed.
func moduleFile(ctx context.Context, mod, version string) (gomod, dir string, err error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod+"@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := toolcache.Run(cmd)
	if err != nil {
		return "", "", err
	}
	var info struct{ GoMod, Dir string }
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return "", "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	return info.GoMod, info.Dir, nil
}

// replaceBlock returns the lines of the replace block of a go.mod, with
// comments and blank lines dropped.
func replaceBlock(gomod string) ([]string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "replace (":
			in = true
		case in && line == ")":
			in = false
		case in && line != "" && !strings.HasPrefix(line, "//"):
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

func buildKubernetes(ctx context.Context, out string) error {
	gomod, _, err := moduleFile(ctx, "k8s.io/kubernetes", KubernetesVersion)
	if err != nil {
		return err
	}
	lines, err := replaceBlock(gomod)
	if err != nil {
		return err
	}
	// The staging modules are published as k8s.io/X v0.<minor>.<patch>.
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	var replaces []string
	for _, l := range lines {
		mod, _, ok := strings.Cut(l, " => ./staging/")
		if ok {
			replaces = append(replaces, fmt.Sprintf("%s => %s %s", mod, mod, staging))
		}
	}
	major, minor := "1", strings.Split(KubernetesVersion, ".")[1]
	var ld []string
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld, "-X "+p+".gitVersion="+KubernetesVersion, "-X "+p+".gitMajor="+major, "-X "+p+".gitMinor="+minor,
			"-X "+p+".gitTreeState=clean")
	}
	return goBuild(ctx, out, "k8s.io/kubernetes", KubernetesVersion, replaces, "-s -w "+strings.Join(ld, " "),
		"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kubectl")
}

func buildEtcd(ctx context.Context, out string) error {
	if err := goBuild(ctx, out, "go.etcd.io/etcd/server/v3", EtcdVersion, nil, "-s -w", "go.etcd.io/etcd/server/v3"); err != nil {
		return err
	}
	return os.Rename(filepath.Join(out, "bin", "v3"), filepath.Join(out, "bin", "etcd"))
}

func buildArgoCD(ctx context.Context, out string) error {
	gomod, dir, err := moduleFile(ctx, "github.com/argoproj/argo-cd/v2", ArgoCDVersion)
	if err != nil {
		return err
	}
	replaces, err := replaceBlock(gomod)
	if err != nil {
		return err
	}
	ld := "-s -w -X github.com/argoproj/argo-cd/v2/common.version=" + strings.TrimPrefix(ArgoCDVersion, "v")
	if err := goBuild(ctx, out, "github.com/argoproj/argo-cd/v2", ArgoCDVersion, replaces, ld,
		"github.com/argoproj/argo-cd/v2/cmd"); err != nil {
		return err
	}
	bin := filepath.Join(out, "bin")
	if err := os.Rename(filepath.Join(bin, "cmd"), filepath.Join(bin, "argocd")); err != nil {
		return err
	}
	for _, name := range []string{"argocd-application-controller", "argocd-repo-server"} {
		if err := os.Symlink("argocd", filepath.Join(bin, name)); err != nil {
			return err
		}
	}
	return copyDir(filepath.Join(dir, "manifests", "crds"), filepath.Join(out, "crds"), ".yaml")
}

// buildArgoCDWithUI builds Argo CD's multi-call binary, as buildArgoCD
// does, from a copy of its module in out whose ui/dist/app is assets, and
// returns it named argocd-server (so it runs the API server).
func buildArgoCDWithUI(ctx context.Context, assets, out string) (string, error) {
	if _, err := os.Stat(filepath.Join(assets, "index.html")); err != nil {
		return "", fmt.Errorf("%s is not a build of Argo CD's UI: %w", assets, err)
	}
	gomod, dir, err := moduleFile(ctx, "github.com/argoproj/argo-cd/v2", ArgoCDVersion)
	if err != nil {
		return "", err
	}
	replaces, err := replaceBlock(gomod)
	if err != nil {
		return "", err
	}
	src := filepath.Join(out, "argo-cd")
	if err := os.CopyFS(src, os.DirFS(dir)); err != nil {
		return "", err
	}
	app := filepath.Join(src, "ui", "dist", "app")
	if err := os.RemoveAll(app); err != nil {
		return "", err
	}
	if err := os.CopyFS(app, os.DirFS(assets)); err != nil {
		return "", err
	}
	ld := "-s -w -X github.com/argoproj/argo-cd/v2/common.version=" + strings.TrimPrefix(ArgoCDVersion, "v")
	if err := goBuild(ctx, out, "github.com/argoproj/argo-cd/v2", ArgoCDVersion, append(replaces, "github.com/argoproj/argo-cd/v2 => "+src), ld,
		"github.com/argoproj/argo-cd/v2/cmd"); err != nil {
		return "", err
	}
	bin := filepath.Join(out, "bin", "argocd-server")
	return bin, os.Rename(filepath.Join(out, "bin", "cmd"), bin)
}

func buildHelm(ctx context.Context, out string) error {
	return goBuild(ctx, out, "helm.sh/helm/v3", HelmVersion, nil, "-s -w -X helm.sh/helm/v3/internal/version.version="+HelmVersion,
		"helm.sh/helm/v3/cmd/helm")
}

// copyServiceMonitorCRD copies the ServiceMonitor and PrometheusRule CRDs
// out of the prometheus-operator module; nothing is built.
func copyServiceMonitorCRD(ctx context.Context, out string) error {
	_, dir, err := moduleFile(ctx, "github.com/prometheus-operator/prometheus-operator", PrometheusOperatorVersion)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "crds"), 0o755); err != nil {
		return err
	}
	for _, crd := range []string{"servicemonitors", "prometheusrules"} {
		b, err := os.ReadFile(filepath.Join(dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+crd+".yaml"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "crds", crd+".yaml"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyDir copies the files of src ending in ext into dst.
func copyDir(src, dst, ext string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ext) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
