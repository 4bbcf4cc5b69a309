package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/argosyproj/argosy/schemas"
)

// Inspect asks an Application's cluster a live question, as the viewer:
// its tree (schemas.QueryTree) or its diff (schemas.QueryDiff), the hub's
// live questions (docs/hub.md).
type Inspect func(ctx context.Context, query, cluster, namespace, name string) (json.RawMessage, error)

type inspectKey struct{}

// WithInspect returns ctx with the function the tree and diff pages ask
// a cluster with.
func WithInspect(ctx context.Context, f Inspect) context.Context {
	return context.WithValue(ctx, inspectKey{}, f)
}

// treeData is the tree page's: the Application, its cluster, and its
// nodes in depth-first order, each with its depth; or why there is none.
type treeData struct {
	Namespace, Name, Cluster string
	Nodes                    []treeRow
	Err                      string
}

type treeRow struct {
	Depth                          int
	Kind, Group, Namespace, Name   string
	Health, HealthMessage, Summary string
}

// tree shows an Application's live resource tree on the cluster the
// query names, as the cluster answers now.
func (h *Handler) tree(r *http.Request) (string, any, error) {
	d := treeData{Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), Cluster: r.URL.Query().Get("cluster")}
	raw, err := ask(r, schemas.QueryTree, d.Cluster, d.Namespace, d.Name)
	if perr := (*pageError)(nil); errors.As(err, &perr) {
		return "", nil, perr
	}
	if err != nil {
		d.Err = err.Error()
		return "tree", d, nil
	}
	var tree schemas.ApplicationTree
	if err := json.Unmarshal(raw, &tree); err != nil {
		d.Err = fmt.Sprintf("the cluster's tree does not decode: %v", err)
		return "tree", d, nil
	}
	d.Nodes = ordered(tree.Nodes)
	return "tree", d, nil
}

// ask asks the Application's cluster query for a page: a page error
// without a cluster, and an error for people when the cluster does not
// answer or this dashboard cannot ask.
func ask(r *http.Request, query, cluster, namespace, name string) (json.RawMessage, error) {
	if cluster == "" {
		return nil, &pageError{status: http.StatusBadRequest, msg: "no cluster: the " + query + " is one cluster's (?cluster=NAME)"}
	}
	f, ok := r.Context().Value(inspectKey{}).(Inspect)
	if !ok {
		return nil, errors.New("this dashboard cannot ask clusters live questions")
	}
	return f(r.Context(), query, cluster, namespace, name)
}

// ordered lays nodes out depth first, each child under its parent; a
// node whose parent is not in the tree is a root.
func ordered(nodes []schemas.TreeNode) []treeRow {
	byUID := map[string]bool{}
	for _, n := range nodes {
		byUID[n.UID] = true
	}
	children := map[string][]schemas.TreeNode{}
	var roots []schemas.TreeNode
	for _, n := range nodes {
		if len(n.ParentRefs) > 0 && byUID[n.ParentRefs[0].UID] && n.ParentRefs[0].UID != n.UID {
			children[n.ParentRefs[0].UID] = append(children[n.ParentRefs[0].UID], n)
			continue
		}
		roots = append(roots, n)
	}
	var out []treeRow
	seen := map[string]bool{}
	var walk func(n schemas.TreeNode, depth int)
	walk = func(n schemas.TreeNode, depth int) {
		if seen[n.UID] && n.UID != "" {
			return
		}
		seen[n.UID] = true
		row := treeRow{Depth: depth, Kind: n.Kind, Group: n.Group, Namespace: n.Namespace, Name: n.Name}
		if n.Health != nil {
			row.Health, row.HealthMessage = n.Health.Status, n.Health.Message
		}
		var info []string
		for _, i := range n.Info {
			info = append(info, i.Name+": "+i.Value)
		}
		row.Summary = strings.Join(info, "; ")
		out = append(out, row)
		for _, c := range children[n.UID] {
			walk(c, depth+1)
		}
	}
	for _, n := range roots {
		walk(n, 0)
	}
	return out
}
