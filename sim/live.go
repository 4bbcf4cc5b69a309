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
// ReplicaSet and Pod, a Service, ConfigMaps), as schemas.ApplicationTree; a manifest is the node's object; logs are a few lines; a
// diff is every managed resource as applied.
func (c *Cluster) Answer(_ context.Context, q *schemas.QueryRequested) (json.RawMessage, bool, error) {
	c.mu.Lock()
	a, ok := c.apps[spoke.Ref{Kind: spoke.KindApplication, Namespace: q.Namespace, Name: q.Name}]
	var nodes []schemas.TreeNode
	if ok {
		nodes = a.nodes(q.Name)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false, simRefusal{schemas.QueryNotFound, fmt.Errorf("application %s/%s not found", q.Namespace, q.Name)}
	}
	switch q.Query {
	case schemas.QueryTree:
		b, err := json.Marshal(schemas.ApplicationTree{Nodes: nodes})
		return b, false, err
	case schemas.QueryDiff:
		b, err := json.Marshal(diffOf(nodes))
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
			b, err := json.Marshal(map[string]any{"apiVersion": apiVersion(n), "kind": n.Kind,
				"metadata": map[string]any{"name": n.Name, "namespace": n.Namespace, "uid": n.UID}})
			return b, false, err
		}
		return nil, false, simRefusal{schemas.QueryNotInTree, fmt.Errorf("the resource is not part of the Application %s/%s", q.Namespace, q.Name)}
	}
	return nil, false, simRefusal{schemas.QueryInvalid, fmt.Errorf("%q is not a question this agent answers", q.Query)}
}

// diffOf is the diff answer of a simulated tree: its managed resources
// (those with no parent), each as applied, unmodified.
func diffOf(nodes []schemas.TreeNode) schemas.ApplicationDiff {
	d := schemas.ApplicationDiff{Items: []schemas.ResourceDiff{}}
	for _, n := range nodes {
		if len(n.ParentRefs) > 0 {
			continue
		}
		state, _ := json.Marshal(map[string]any{"apiVersion": apiVersion(n), "kind": n.Kind, // a map of strings always encodes
			"metadata": map[string]any{"name": n.Name, "namespace": n.Namespace}})
		d.Items = append(d.Items, schemas.ResourceDiff{Group: n.Group, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name,
			TargetState: string(state), NormalizedLiveState: string(state), SyncStatus: "Synced"})
	}
	return d
}

// apiVersion is n's group and version, as an object names them.
func apiVersion(n schemas.TreeNode) string {
	if n.Group == "" {
		return n.Version
	}
	return n.Group + "/" + n.Version
}

// nodes is a's simulated tree; name names its resources.
func (a *app) nodes(name string) []schemas.TreeNode {
	ns := "sim-" + name
	health := &schemas.TreeHealth{Status: a.Health}
	ref := func(group, kind, name, uid string) schemas.TreeRef {
		return schemas.TreeRef{Group: group, Version: "v1", Kind: kind, Namespace: ns, Name: name, UID: a.UID + "-" + uid}
	}
	parent := func(r schemas.TreeRef) []schemas.TreeRef { r.Version = ""; return []schemas.TreeRef{r} }
	dep := schemas.TreeNode{TreeRef: ref("apps", "Deployment", name, "deploy"), Health: health}
	rs := schemas.TreeNode{TreeRef: ref("apps", "ReplicaSet", name+"-5d8f7", "rs"), Health: health, ParentRefs: parent(dep.TreeRef)}
	pod := schemas.TreeNode{TreeRef: ref("", "Pod", name+"-5d8f7-x2v9q", "pod"), Health: health, ParentRefs: parent(rs.TreeRef)}
	out := []schemas.TreeNode{dep, rs, pod, {TreeRef: ref("", "Service", name, "svc"), Health: &schemas.TreeHealth{Status: "Healthy"}}}
	for i := range max(a.Resources-2, 0) {
		out = append(out, schemas.TreeNode{TreeRef: ref("", "ConfigMap", fmt.Sprintf("%s-config-%d", name, i), fmt.Sprint("cm", i))})
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
