package mirror

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// errTerminating is a namespace being deleted: its objects are written
// again once it is gone and made anew.
var errTerminating = errors.New("the namespace is being deleted; it is made again in a later round")

// namespace makes cluster's namespace ns if it is missing, and refuses one
// that is not the mirror's for that cluster.
func (m *Mirror) namespace(ctx context.Context, cluster, ns string) error {
	ri := m.dyn.Resource(namespaceGVR)
	cur, err := ri.Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": map[string]any{LabelManagedBy: FieldManager, LabelCluster: cluster}},
		}}
		if _, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	if l := cur.GetLabels(); l[LabelManagedBy] != FieldManager || l[LabelCluster] != cluster {
		return fmt.Errorf("namespace %s: %w (it lacks %s=%s and %s=%s)", ns, ErrForeignNamespace, LabelManagedBy, FieldManager, LabelCluster, cluster)
	}
	if cur.GetDeletionTimestamp() != nil {
		return fmt.Errorf("namespace %s: %w", ns, errTerminating)
	}
	return nil
}

// prune deletes the mirror's namespaces whose cluster is no longer in the
// fleet, or was deregistered: kept holds the namespaces of the others.
// Deleting a namespace deletes only the mirrored objects in it, never
// anything on the cluster.
func (m *Mirror) prune(ctx context.Context, kept map[string]bool) error {
	ri := m.dyn.Resource(namespaceGVR)
	l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + FieldManager})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	var errs []error
	for _, ns := range l.Items {
		name := ns.GetName()
		if kept[name] || ns.GetDeletionTimestamp() != nil || name != m.o.prefix+ns.GetLabels()[LabelCluster] {
			continue
		}
		if err := ri.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", name, err))
			continue
		}
		m.o.log.InfoContext(ctx, "mirror namespace deleted: its cluster left the fleet", "namespace", name)
	}
	return errors.Join(errs...)
}
