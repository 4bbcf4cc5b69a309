package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/spoke"
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// State keeps what the spoke has applied in a ConfigMap, so that it survives
// a restart of the spoke (whose pod has a read-only disk). One data key per
// object; the value is the spoke.Applied record as JSON.
type State struct {
	cms  dynamic.ResourceInterface
	name string

	mu sync.Mutex // serializes read-modify-write of the ConfigMap
}

var _ spoke.StateStore = (*State)(nil)

// NewState returns a store in ConfigMap namespace/name, created on first Put.
func NewState(dyn dynamic.Interface, namespace, name string) *State {
	return &State{cms: dyn.Resource(configMapGVR).Namespace(namespace), name: name}
}

// Get implements spoke.StateStore.
func (s *State) Get(ctx context.Context, key string) (spoke.Applied, bool, error) {
	cm, err := s.cms.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return spoke.Applied{}, false, nil
	}
	if err != nil {
		return spoke.Applied{}, false, fmt.Errorf("read spoke state: %w", err)
	}
	raw, ok, err := unstructured.NestedString(cm.Object, "data", key)
	if err != nil || !ok {
		return spoke.Applied{}, false, err
	}
	var a spoke.Applied
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return spoke.Applied{}, false, fmt.Errorf("spoke state %s: %w", key, err)
	}
	return a, true, nil
}

// Put implements spoke.StateStore. It returns once the record is stored.
func (s *State) Put(ctx context.Context, key string, a spoke.Applied) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	for {
		cm, err := s.cms.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": s.name, "labels": map[string]any{LabelManaged: "true"}},
				"data":     map[string]any{key: string(raw)}}}
			_, err = s.cms.Create(ctx, cm, metav1.CreateOptions{})
		} else if err == nil {
			if err := unstructured.SetNestedField(cm.Object, string(raw), "data", key); err != nil {
				return err
			}
			_, err = s.cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			continue // another writer won the race: read again
		default:
			return fmt.Errorf("write spoke state: %w", err)
		}
	}
}
