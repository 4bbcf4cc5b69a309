package sim

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

// Answer implements spoke.Inspector for a simulated cluster: the
// Application's tree is its simulated resources (a Deployment with its
// ReplicaSet and Pod, a Service, ConfigMaps), in the shape spoke/live
// answers with; a manifest is the node's object; logs are a few lines.
func (c *Cluster) Answer(_ context.Context, q *schemas.QueryRequested) (json.RawMessage, bool, error) {
	c.mu.Lock()
	a, ok := c.apps[spoke.Ref{Kind: spoke.KindApplication, Namespace: q.Namespace, Name: q.Name}]
	var nodes []simNode
	if ok {
		nodes = a.nodes(q.Name)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false, simRefusal{schemas.QueryNotFound, fmt.Errorf("application %s/%s not found", q.Namespace, q.Name)}
	}
	switch q.Query {
	case schemas.QueryTree:
		b, err := json.Marshal(map[string]any{"nodes": nodes})
		return b, false, err
	case schemas.QueryManifest, schemas.QueryLogs:
		for _, n := range nodes {
			if q.Target == nil || n.Kind != q.Target.Kind || n.Name != q.Target.Name || n.Namespace != q.Target.Namespace {
				continue
			}
			if q.Query == schemas.QueryLogs {
				b, err := json.Marshal(map[string]any{"lines": []string{"simulated: listening on :8080", "simulated: ready"}})
				return b, false, err
			}
			b, err := json.Marshal(map[string]any{"apiVersion": n.apiVersion(), "kind": n.Kind,
				"metadata": map[string]any{"name": n.Name, "namespace": n.Namespace, "uid": n.UID}})
			return b, false, err
		}
		return nil, false, simRefusal{schemas.QueryNotInTree, fmt.Errorf("the resource is not part of the Application %s/%s", q.Namespace, q.Name)}
	}
	return nil, false, simRefusal{schemas.QueryInvalid, fmt.Errorf("%q is not a question this agent answers", q.Query)}
}

// simNode is a node of a simulated tree, with spoke/live's JSON names.
type simNode struct {
	Group      string       `json:"group,omitempty"`
	Version    string       `json:"version"`
	Kind       string       `json:"kind"`
	Namespace  string       `json:"namespace"`
	Name       string       `json:"name"`
	UID        string       `json:"uid"`
	ParentRefs []simParent  `json:"parentRefs,omitempty"`
	Health     *simHealthOf `json:"health,omitempty"`
}

type simParent struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

type simHealthOf struct {
	Status string `json:"status"`
}

func (n simNode) apiVersion() string {
	if n.Group == "" {
		return n.Version
	}
	return n.Group + "/" + n.Version
}

func (n simNode) parent() []simParent {
	return []simParent{{Group: n.Group, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, UID: n.UID}}
}

// nodes is a's simulated tree; name names its resources.
func (a *app) nodes(name string) []simNode {
	ns := "sim-" + name
	health := &simHealthOf{Status: a.Health}
	uid := func(s string) string { return a.UID + "-" + s }
	dep := simNode{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name, UID: uid("deploy"), Health: health}
	rs := simNode{Group: "apps", Version: "v1", Kind: "ReplicaSet", Namespace: ns, Name: name + "-5d8f7", UID: uid("rs"), Health: health,
		ParentRefs: dep.parent()}
	pod := simNode{Version: "v1", Kind: "Pod", Namespace: ns, Name: name + "-5d8f7-x2v9q", UID: uid("pod"), Health: health, ParentRefs: rs.parent()}
	out := []simNode{dep, rs, pod, {Version: "v1", Kind: "Service", Namespace: ns, Name: name, UID: uid("svc"), Health: &simHealthOf{Status: "Healthy"}}}
	for i := range max(a.Resources-2, 0) {
		out = append(out, simNode{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: fmt.Sprintf("%s-config-%d", name, i), UID: uid(fmt.Sprint("cm", i))})
	}
	return out
}

// simRefusal is a refusal with its question's code.
type simRefusal struct {
	code string
	err  error
}

func (e simRefusal) Error() string     { return e.err.Error() }
func (e simRefusal) QueryCode() string { return e.code }
