package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// errTerminating is a namespace being deleted: its objects are written
// again once it is gone and made anew.
var errTerminating = errors.New("the namespace is being deleted; it is made again in a later round")

// listPage is how many objects a list call asks for at a time.
const listPage = 500

// state is what the mirror cluster holds of the mirror's, read at the
// start of a round in a few list calls of metadata alone, whatever the
// fleet's size: a round in which nothing changed makes no other call to
// the mirror cluster.
type state struct {
	// namespaces are the mirror's namespaces by name: their cluster label
	// and whether they are being deleted.
	namespaces map[string]namespaceState
	// hashes are the hashes of the mirror's Applications, by namespace
	// and name.
	hashes map[string]map[string]string
}

type namespaceState struct {
	cluster     string
	terminating bool
}

// read lists the mirror's namespaces and Applications.
func (m *Mirror) read(ctx context.Context) (*state, error) {
	st := &state{namespaces: map[string]namespaceState{}, hashes: map[string]map[string]string{}}
	err := m.each(ctx, namespaceGVR, func(ns *metav1.PartialObjectMetadata) {
		st.namespaces[ns.Name] = namespaceState{cluster: ns.Labels[LabelCluster], terminating: ns.DeletionTimestamp != nil}
	})
	if err != nil {
		return nil, fmt.Errorf("mirror: list namespaces: %w", err)
	}
	err = m.each(ctx, applicationGVR, func(a *metav1.PartialObjectMetadata) {
		if st.hashes[a.Namespace] == nil {
			st.hashes[a.Namespace] = map[string]string{}
		}
		st.hashes[a.Namespace][a.Name] = a.Annotations[AnnotationHash]
	})
	if err != nil {
		return nil, fmt.Errorf("mirror: list Applications: %w", err)
	}
	return st, nil
}

// each calls f with the metadata of every object of gvr, in every
// namespace, that carries the mirror's label, listPage at a time.
func (m *Mirror) each(ctx context.Context, gvr schema.GroupVersionResource, f func(*metav1.PartialObjectMetadata)) error {
	opts := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + FieldManager, Limit: listPage}
	for {
		l, err := m.md.Resource(gvr).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range l.Items {
			f(&l.Items[i])
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return nil
		}
	}
}

// namespace makes cluster's namespace ns if the mirror has none, and
// refuses one that is not the mirror's for that cluster.
func (m *Mirror) namespace(ctx context.Context, cluster, ns string, have *state) error {
	if cur, ok := have.namespaces[ns]; ok {
		switch {
		case cur.cluster != cluster:
			return fmt.Errorf("namespace %s: %w (it mirrors cluster %q)", ns, ErrForeignNamespace, cur.cluster)
		case cur.terminating:
			return fmt.Errorf("namespace %s: %w", ns, errTerminating)
		}
		return nil
	}
	ri := m.dyn.Resource(namespaceGVR)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{LabelManagedBy: FieldManager, LabelCluster: cluster}},
	}}
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		return nil
	}
	// It exists without the mirror's label, or was made since the round
	// began.
	cur, err := ri.Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	if !mirrorsNamespace(cur.GetLabels(), cluster) {
		return fmt.Errorf("namespace %s: %w (it lacks %s=%s and %s=%s)", ns, ErrForeignNamespace, LabelManagedBy, FieldManager, LabelCluster, cluster)
	}
	return nil
}

// prune deletes the mirror's namespaces of the deregistered clusters
// (namespaces names them). A deregistered cluster stays in the views, so
// only it is pruned: a cluster the views do not list is more likely one a
// view being rebuilt has not reached yet than one gone, and its namespace
// is kept. Deleting a namespace deletes only the mirrored objects in it,
// never anything on the cluster.
func (m *Mirror) prune(ctx context.Context, have *state, namespaces []string) error {
	ri := m.dyn.Resource(namespaceGVR)
	var errs []error
	for _, name := range namespaces {
		ns, ok := have.namespaces[name]
		if !ok || ns.terminating || name != m.o.prefix+ns.cluster {
			continue
		}
		if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", name, err))
			continue
		}
		m.o.log.InfoContext(ctx, "mirror namespace deleted: its cluster was deregistered", "namespace", name)
	}
	return errors.Join(errs...)
}

// mirrorsNamespace reports whether a namespace's labels mark it as the
// mirror's namespace of cluster.
func mirrorsNamespace(labels map[string]string, cluster string) bool {
	return labels[LabelManagedBy] == FieldManager && labels[LabelCluster] == cluster
}

// clusterOf is the cluster whose mirror namespace ns would be, named
// prefix+cluster; "" when ns is not so named.
func clusterOf(prefix, ns string) string {
	c, ok := strings.CutPrefix(ns, prefix)
	if !ok {
		return ""
	}
	return c
}
