package live

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SecretMask replaces each value of a Secret's data and stringData, as
// Argo CD masks them.
const SecretMask = "++++++++"

// lastApplied is kubectl's annotation that holds a copy of the object as
// applied: for a Secret, its values in clear.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Manifest returns the live object ref names, as JSON, if it is a node of
// app's tree; anything else is ErrNotInApp, and nothing of it is read. Its
// managedFields are removed; a Secret's values are masked (SecretMask) and
// its last-applied-configuration annotation dropped.
func (s *Source) Manifest(ctx context.Context, app string, ref Ref) (json.RawMessage, error) {
	n, err := s.node(ctx, app, ref)
	if err != nil {
		return nil, err
	}
	obj, err := s.get(ctx, n.TreeRef)
	if err != nil {
		return nil, err
	}
	if string(obj.GetUID()) != n.UID {
		// Replaced since the tree was read: the new object is not known
		// to be the Application's.
		return nil, fmt.Errorf("%s was replaced: %w", ref, ErrNotInApp)
	}
	Redact(obj)
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ref, err)
	}
	return b, nil
}

// Redact removes from obj what an answer never shows: its managedFields
// and, for a Secret, its values (each replaced by SecretMask) and its
// last-applied-configuration annotation.
func Redact(obj *unstructured.Unstructured) {
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	if obj.GroupVersionKind().Group != "" || obj.GetKind() != "Secret" {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		values, ok := obj.Object[field].(map[string]any)
		if !ok {
			delete(obj.Object, field) // absent, or not a map of values: show nothing of it
			continue
		}
		for k := range values {
			values[k] = SecretMask
		}
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[lastApplied]; ok {
			delete(a, lastApplied)
			if len(a) == 0 {
				a = nil // SetAnnotations removes the field
			}
			obj.SetAnnotations(a)
		}
	}
}
