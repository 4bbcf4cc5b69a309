// Package kube keeps the agent's state where it survives a restart of the
// agent, whose pod has a read-only disk: in a ConfigMap, through the
// Kubernetes API. The agent's access to Argo CD itself is internal/argocd.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
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

var _ spoke.Store = (*State)(nil)

// markPrefix starts the data keys of deployment marks: "deployed.<namespace>.<name>"
// (a namespace has no dots, so the first one after the prefix ends it).
const markPrefix = "deployed."

// NewState returns a store in ConfigMap namespace/name, created on first Put.
func NewState(dyn dynamic.Interface, namespace, name string) (*State, error) {
	if dyn == nil || namespace == "" || name == "" {
		return nil, errors.New("state: a dynamic client, a namespace and a name are required")
	}
	return &State{cms: dyn.Resource(configMapGVR).Namespace(namespace), name: name}, nil
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
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.update(ctx, func(data map[string]any) { data[key] = string(raw) })
}

// Marks implements spoke.MarkStore.
func (s *State) Marks(ctx context.Context) (map[string]spoke.DeployMark, error) {
	out := map[string]spoke.DeployMark{}
	cm, err := s.cms.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read spoke state: %w", err)
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	for k, raw := range data {
		rest, ok := strings.CutPrefix(k, markPrefix)
		if !ok {
			continue
		}
		ns, name, _ := strings.Cut(rest, ".")
		var m spoke.DeployMark
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return nil, fmt.Errorf("spoke state %s: %w", k, err)
		}
		out[ns+"/"+name] = m
	}
	return out, nil
}

// SaveMarks implements spoke.MarkStore, in one update of the ConfigMap.
func (s *State) SaveMarks(ctx context.Context, set map[string]spoke.DeployMark, remove []string) error {
	enc := make(map[string]string, len(set))
	for k, m := range set {
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		enc[markKey(k)] = string(raw)
	}
	return s.update(ctx, func(data map[string]any) {
		for k, v := range enc {
			data[k] = v
		}
		for _, k := range remove {
			delete(data, markKey(k))
		}
	})
}

func markKey(app string) string { return markPrefix + strings.Replace(app, "/", ".", 1) }

// update changes the ConfigMap's data with edit, creating the ConfigMap if
// needed, and retries on conflicts with other writers.
func (s *State) update(ctx context.Context, edit func(data map[string]any)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		cm, err := s.cms.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data := map[string]any{}
			edit(data)
			cm = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": s.name, "labels": map[string]any{argocd.LabelManaged: "true"}},
				"data":     data}}
			_, err = s.cms.Create(ctx, cm, metav1.CreateOptions{})
		} else if err == nil {
			data, _, _ := unstructured.NestedMap(cm.Object, "data")
			if data == nil {
				data = map[string]any{}
			}
			edit(data)
			cm.Object["data"] = data
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
