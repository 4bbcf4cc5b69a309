package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/argosyproj/argosy/internal/testenv/testproc"
)

// Env is a running Kubernetes API: etcd, kube-apiserver and
// kube-controller-manager (garbage collector and namespace controllers only;
// there is no kubelet, so pods never run, though StartKubelet answers a
// Pod's log). Argo CD runs on it once StartArgoCD is called.
type Env struct {
	Bin Binaries
	// Dir holds configuration, data and every process's log.
	Dir string
	// URL is the apiserver's address.
	URL string
	// Admin is a rest.Config of a cluster administrator (system:masters).
	Admin *rest.Config
	// Kubeconfig is a kubeconfig file for Admin.
	Kubeconfig string

	mu    sync.Mutex // guards procs
	procs []*testproc.Proc

	argoMu sync.Mutex // held while Argo CD starts
	argo   bool       // Argo CD is running
	// redis and repo are the addresses of Argo CD's redis and repo-server,
	// and server the URL of its API server once StartArgoCDServer started it.
	redis, repo, server string
}

const adminToken = "argosy-kubetest-admin" //nolint:gosec // a test credential on 127.0.0.1

// Start starts etcd, kube-apiserver and kube-controller-manager from the
// built binaries (see Build and Locate) in a new temporary directory. A port
// taken between choosing and binding it makes it try again, up to three
// times. The caller must Stop the Env.
func Start(ctx context.Context, bin Binaries) (*Env, error) {
	var err error
	for range 3 {
		var e *Env
		if e, err = start(ctx, bin); err == nil {
			return e, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, err
}

func start(ctx context.Context, bin Binaries) (e *Env, err error) {
	dir, err := os.MkdirTemp("", "argosy-kube-*")
	if err != nil {
		return nil, err
	}
	e = &Env{Bin: bin, Dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	etcdURL, err := e.startEtcd(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.startAPIServer(ctx, etcdURL); err != nil {
		return nil, err
	}
	if err := e.startControllerManager(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// addProc records a started process for Stop.
func (e *Env) addProc(p *testproc.Proc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = append(e.procs, p)
}

func (e *Env) startEtcd(ctx context.Context) (string, error) {
	ports, err := testproc.FreePorts(2)
	if err != nil {
		return "", err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	p, err := testproc.Start(e.Dir, "etcd", e.Bin.Etcd, []string{
		"--name", "default", "--data-dir", filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default=" + peer,
		"--unsafe-no-fsync", "--log-level", "warn",
	}, nil)
	if err != nil {
		return "", err
	}
	e.addProc(p)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return client, p.WaitFor(ctx, func(ctx context.Context) error { return httpOK(ctx, http.DefaultClient, client+"/health", "") })
}

func (e *Env) startAPIServer(ctx context.Context, etcdURL string) error {
	ports, err := testproc.FreePorts(1)
	if err != nil {
		return err
	}
	saKey := filepath.Join(e.Dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return err
	}
	tokens := filepath.Join(e.Dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return err
	}
	p, err := testproc.Start(e.Dir, "kube-apiserver", e.Bin.APIServer, []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[0]),
		"--cert-dir", filepath.Join(e.Dir, "pki"),
		"--token-auth-file", tokens,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--endpoint-reconciler-type", "none",
		"--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false",
		"--v", "0",
	}, nil)
	if err != nil {
		return err
	}
	e.addProc(p)
	e.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	e.Admin = &rest.Config{Host: e.URL, BearerToken: adminToken, QPS: 200, Burst: 400,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.WaitFor(ctx, func(ctx context.Context) error { return httpOK(ctx, insecureClient, e.URL+"/readyz", adminToken) }); err != nil {
		return err
	}
	e.Kubeconfig = filepath.Join(e.Dir, "admin.kubeconfig")
	return writeKubeconfig(e.Kubeconfig, e.URL, adminToken, "")
}

func (e *Env) startControllerManager(ctx context.Context) error {
	ports, err := testproc.FreePorts(1)
	if err != nil {
		return err
	}
	p, err := testproc.Start(e.Dir, "kube-controller-manager", e.Bin.ControllerManager, []string{
		"--kubeconfig", e.Kubeconfig, "--authentication-kubeconfig", e.Kubeconfig, "--authorization-kubeconfig", e.Kubeconfig,
		"--controllers", "garbagecollector,namespace",
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[0]),
		"--cert-dir", filepath.Join(e.Dir, "kcm-pki"),
		"--v", "0",
	}, nil)
	if err != nil {
		return err
	}
	e.addProc(p)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	healthz := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
	return p.WaitFor(ctx, func(ctx context.Context) error { return httpOK(ctx, insecureClient, healthz, "") })
}

// insecureClient talks to the test servers' self-signed certificates on
// 127.0.0.1.
var insecureClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test servers on 127.0.0.1

// Stop ends every process, newest first, and removes the directory.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for i := len(e.procs) - 1; i >= 0; i-- {
		errs = append(errs, e.procs[i].Stop(10*time.Second))
	}
	e.procs = nil
	return errors.Join(append(errs, os.RemoveAll(e.Dir))...)
}

func httpOK(ctx context.Context, c *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}

func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return os.WriteFile(path, b, 0o600)
}

// writeKubeconfig writes a kubeconfig for server and token whose context
// defaults to namespace ns ("" for default).
func writeKubeconfig(path, server, token, ns string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "admin", Namespace: ns}
	cfg.CurrentContext = "kubetest"
	return clientcmd.WriteToFile(*cfg, path)
}

// randomSuffix returns n random hex characters.
func randomSuffix(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)[:n]
}
