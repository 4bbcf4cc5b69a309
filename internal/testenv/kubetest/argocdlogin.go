package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// StartArgoCDServerWithLogin starts another Argo CD API server, as
// StartArgoCDServer does but with authentication on: users (name to
// password) are local accounts that may log in, and policy is its RBAC
// (argocd-rbac-cm's policy.csv; no default role), logs included (Argo CD
// 2's server.rbac.log.enforce.enable: without it, whoever may get an
// Application may read its logs). It returns its address.
// The accounts and the policy are the namespace's, which the server
// without authentication ignores.
func (e *Env) StartArgoCDServerWithLogin(ctx context.Context, users map[string]string, policy string) (string, error) {
	if err := e.StartArgoCD(ctx); err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(e.Admin)
	if err != nil {
		return "", err
	}
	accounts, secrets := map[string]any{"server.rbac.log.enforce.enable": "true"}, map[string]any{}
	for u, pw := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			return "", err
		}
		accounts["accounts."+u] = "login"
		secrets["accounts."+u+".password"] = string(h)
		secrets["accounts."+u+".passwordMtime"] = time.Now().UTC().Format(time.RFC3339)
	}
	for _, p := range []struct {
		resource, name string
		patch          map[string]any
	}{
		{"configmaps", "argocd-cm", map[string]any{"data": accounts}},
		{"configmaps", "argocd-rbac-cm", map[string]any{"data": map[string]any{"policy.csv": policy}}},
		{"secrets", "argocd-secret", map[string]any{"stringData": secrets}},
	} {
		b, err := json.Marshal(p.patch)
		if err != nil {
			return "", err
		}
		ri := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: p.resource}).Namespace(ArgoNamespace)
		if _, err := ri.Patch(ctx, p.name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			return "", fmt.Errorf("patch %s: %w", p.name, err)
		}
	}
	return e.startArgoServer(ctx, "argocd-server-login-"+randomSuffix(6))
}

// ArgoCDLogin logs user in to the Argo CD API server at addr with
// password, and returns the session's token.
func ArgoCDLogin(ctx context.Context, addr, user, password string) (string, error) {
	body, err := json.Marshal(map[string]string{"username": user, "password": password})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/v1/session", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct{ Token string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || out.Token == "" {
		return "", fmt.Errorf("log %s in to Argo CD: %s %s", user, resp.Status, b)
	}
	return out.Token, nil
}
