package live

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/schemas"
)

// childKinds are the kinds searched for children of a tree's nodes, in the
// namespaces of its managed resources, parents before their children so
// that one pass over them finds the whole chain (a Deployment's ReplicaSets,
// then their Pods). A Service's Endpoints, which no ownerReference links
// and whose API is deprecated, are left out; its EndpointSlices are in.
var childKinds = []schema.GroupVersionResource{
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "apps", Version: "v1", Resource: "controllerrevisions"},
	{Version: "v1", Resource: "pods"},
	{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
}

// listPage is how many objects one list call asks for.
const listPage = 500

// tree reads app and builds its nodes, sorted by group, kind, namespace and
// name.
func (s *Source) tree(ctx context.Context, app string) ([]Node, error) {
	a, err := s.application(ctx, app)
	if err != nil {
		return nil, err
	}
	b := &builder{s: s, app: app, uids: map[string]bool{}}
	namespaces, err := b.roots(ctx, a)
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces {
		for _, gvr := range childKinds {
			if err := b.children(ctx, s.dyn.Resource(gvr).Namespace(ns)); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(b.nodes, func(x, y Node) int {
		return cmp.Or(cmp.Compare(x.Group, y.Group), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return b.nodes, nil
}

// builder gathers one tree's nodes.
type builder struct {
	s     *Source
	app   string
	nodes []Node
	uids  map[string]bool
}

// add adds a node, or says ErrTooLarge.
func (b *builder) add(n Node) error {
	if len(b.nodes) >= b.s.opts.maxNodes {
		return fmt.Errorf("tree of application %s has more than %d nodes: %w", b.app, b.s.opts.maxNodes, ErrTooLarge)
	}
	b.nodes = append(b.nodes, n)
	b.uids[n.UID] = true
	return nil
}

// roots adds the Application's managed resources that exist and returns
// their namespaces.
func (b *builder) roots(ctx context.Context, a *unstructured.Unstructured) ([]string, error) {
	items, _, err := unstructured.NestedSlice(a.Object, "status", "resources")
	if err != nil {
		return nil, fmt.Errorf("application %s: status.resources: %w", b.app, err)
	}
	var namespaces []string
	for _, item := range items {
		r, rs, err := statusResource(item)
		if err != nil {
			return nil, fmt.Errorf("application %s: status.resources: %w", b.app, err)
		}
		obj, err := b.s.get(ctx, r)
		if apierrors.IsNotFound(err) {
			continue // missing: Argo CD's tree holds live objects only
		}
		if err != nil {
			return nil, err
		}
		n := nodeOf(obj)
		n.Health = healthOf(rs)
		if err := b.add(n); err != nil {
			return nil, err
		}
		if r.Namespace != "" && !slices.Contains(namespaces, r.Namespace) {
			namespaces = append(namespaces, r.Namespace)
		}
	}
	return namespaces, nil
}

// children lists ri a page at a time and adds what a node of the tree owns.
func (b *builder) children(ctx context.Context, ri dynamic.ResourceInterface) error {
	opts := metav1.ListOptions{Limit: listPage}
	for {
		list, err := ri.List(ctx, opts)
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return nil // a kind this cluster does not serve
		}
		if err != nil {
			return fmt.Errorf("list children of application %s: %w", b.app, err)
		}
		for i := range list.Items {
			if err := b.child(&list.Items[i]); err != nil {
				return err
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// child adds obj if a node of the tree owns it.
func (b *builder) child(obj *unstructured.Unstructured) error {
	if b.uids[string(obj.GetUID())] {
		return nil // a managed resource already in the tree
	}
	var parents []Ref
	for _, o := range obj.GetOwnerReferences() {
		if b.uids[string(o.UID)] {
			gv, _ := schema.ParseGroupVersion(o.APIVersion) // a malformed one names no group
			parents = append(parents, Ref{Group: gv.Group, Kind: o.Kind, Namespace: obj.GetNamespace(), Name: o.Name, UID: string(o.UID)})
		}
	}
	if len(parents) == 0 {
		return nil
	}
	n := nodeOf(obj)
	n.ParentRefs = parents
	return b.add(n)
}

// get reads the live object ref names.
func (s *Source) get(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	gvr, err := s.resource(ref)
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = s.dyn.Resource(gvr)
	if ref.Namespace != "" {
		ri = s.dyn.Resource(gvr).Namespace(ref.Namespace)
	}
	obj, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	return obj, nil
}

// resource is the resource the API serves ref's kind as.
func (s *Source) resource(ref Ref) (schema.GroupVersionResource, error) {
	gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
	if s.opts.mapper == nil {
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		return gvr, nil
	}
	m, err := s.opts.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("map %s: %w", ref, err)
	}
	return m.Resource, nil
}

// nodeOf is obj's node, without parents or health.
func nodeOf(obj *unstructured.Unstructured) Node {
	gvk := obj.GroupVersionKind()
	n := Node{TreeRef: Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		UID: string(obj.GetUID())}, ResourceVersion: obj.GetResourceVersion()}
	if t := obj.GetCreationTimestamp(); !t.IsZero() {
		at := t.UTC()
		n.CreatedAt = &at
	}
	if gvk.Group == "" && gvk.Kind == "Pod" {
		n.Images, n.Info = podInfo(obj)
	}
	return n
}

// podInfo is a Pod's images and the information Argo CD shows of it: its
// status reason, node, ready containers and restarts.
func podInfo(obj *unstructured.Unstructured) ([]string, []Info) {
	var images []string
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", field) // absent or malformed: none
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok && img != "" && !slices.Contains(images, img) {
					images = append(images, img)
				}
			}
		}
	}
	reason, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	if r, _, _ := unstructured.NestedString(obj.Object, "status", "reason"); r != "" {
		reason = r
	}
	specs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
	statuses, _, _ := unstructured.NestedSlice(obj.Object, "status", "containerStatuses")
	ready, restarts := 0, int64(0)
	for _, st := range statuses {
		m, _ := st.(map[string]any)
		if r, _ := m["ready"].(bool); r {
			ready++
		}
		restarts += toInt(m["restartCount"])
		if w, _, _ := unstructured.NestedString(m, "state", "waiting", "reason"); w != "" {
			reason = w
		} else if t, _, _ := unstructured.NestedString(m, "state", "terminated", "reason"); t != "" {
			reason = t
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		reason = "Terminating"
	}
	info := []Info{{Name: "Status Reason", Value: cmp.Or(reason, "Unknown")}}
	if node, _, _ := unstructured.NestedString(obj.Object, "spec", "nodeName"); node != "" {
		info = append(info, Info{Name: "Node", Value: node})
	}
	info = append(info, Info{Name: "Containers", Value: fmt.Sprintf("%d/%d", ready, len(specs))})
	if restarts > 0 {
		info = append(info, Info{Name: "Restart Count", Value: fmt.Sprint(restarts)})
	}
	return images, info
}

// toInt reads a JSON number as unstructured holds it.
func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// statusResource reads one entry of an Application's .status.resources
// (argocd.ResourceStatusOf): the resource it names, and the entry.
func statusResource(item any) (Ref, schemas.ResourceStatus, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return Ref{}, schemas.ResourceStatus{}, fmt.Errorf("an entry is %T, not an object", item)
	}
	rs := argocd.ResourceStatusOf(m)
	r := Ref{Group: rs.Group, Version: rs.Version, Kind: rs.Kind, Namespace: rs.Namespace, Name: rs.Name}
	if r.Kind == "" || r.Name == "" || r.Version == "" {
		return Ref{}, schemas.ResourceStatus{}, fmt.Errorf("entry %v names no resource", m)
	}
	return r, rs, nil
}

// healthOf is the health Argo CD gave a resource, as a tree node has it.
func healthOf(rs schemas.ResourceStatus) *Health {
	if rs.Health == nil {
		return nil
	}
	return &Health{Status: rs.Health.Status, Message: rs.Health.Message}
}
