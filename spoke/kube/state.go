// Package kube keeps the agent's state where it survives a restart of the
// agent, whose pod has a read-only disk: in ConfigMaps, through the
// Kubernetes API. The agent's access to Argo CD itself is internal/argocd.
package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/argosyproj/argosy/internal/argocd"
	"github.com/argosyproj/argosy/spoke"
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// State keeps what the spoke has applied in ConfigMaps, so that it survives
// a restart of the spoke (whose pod has a read-only disk). Each key has a
// ConfigMap of its own, so a write costs the same with ten Applications as
// with ten thousand, and no object nears the API server's 1 MiB limit. An
// Application's ConfigMap also holds its deployment mark.
//
// The ConfigMaps are named <name>-<hash of the key> and labelled
// argosy.dev/state=<name>; their data keys are:
//
//	key       the state key ("Application.<namespace>.<name>")
//	applied   the spoke.Applied record as JSON, without its spec
//	spec      the desired spec, for Applications
//	deployed  the spoke.DeployMark as JSON
//
// Records marked Transient are also labelled argosy.dev/transient=true,
// so that Prune lists only those, and the records of queued or started
// operations argosy.dev/operation=open, so that OpenOperations lists only
// those.
type State struct {
	cms  dynamic.ResourceInterface
	name string
}

var (
	_ spoke.Store          = (*State)(nil)
	_ spoke.Pruner         = (*State)(nil)
	_ spoke.OperationStore = (*State)(nil)
)

// Labels and data keys of the state's ConfigMaps.
const (
	LabelState     = "argosy.dev/state"
	LabelTransient = "argosy.dev/transient"
	LabelOperation = "argosy.dev/operation"
	dataKey        = "key"
	dataApplied    = "applied"
	dataSpec       = "spec"
	dataMark       = "deployed"
	listPage       = 500
)

// NewState returns a store in ConfigMaps of namespace whose names start
// with name.
func NewState(dyn dynamic.Interface, namespace, name string) (*State, error) {
	if dyn == nil || namespace == "" || name == "" {
		return nil, errors.New("state: a dynamic client, a namespace and a name are required")
	}
	if len(name) > 63 { // it is a label's value too
		return nil, fmt.Errorf("state: name %q is longer than 63 characters", name)
	}
	return &State{cms: dyn.Resource(configMapGVR).Namespace(namespace), name: name}, nil
}

// hashLen is the length of the key's hash in a ConfigMap's name.
const hashLen = 20

// object is the name of key's ConfigMap.
func (s *State) object(key string) string {
	sum := sha256.Sum256([]byte(key))
	return s.name + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// Get implements spoke.StateStore. The record comes with its spec.
func (s *State) Get(ctx context.Context, key string) (spoke.Applied, bool, error) {
	cm, err := s.cms.Get(ctx, s.object(key), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return spoke.Applied{}, false, nil
	}
	if err != nil {
		return spoke.Applied{}, false, fmt.Errorf("read spoke state: %w", err)
	}
	data, err := s.data(cm, key)
	if err != nil {
		return spoke.Applied{}, false, err
	}
	return applied(data, key)
}

// data is cm's data, checked to be key's.
func (s *State) data(cm *unstructured.Unstructured, key string) (map[string]string, error) {
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if got := data[dataKey]; got != key {
		return nil, fmt.Errorf("spoke state %s holds key %q, not %q", cm.GetName(), got, key)
	}
	return data, nil
}

func applied(data map[string]string, key string) (spoke.Applied, bool, error) {
	raw, ok := data[dataApplied]
	if !ok {
		return spoke.Applied{}, false, nil
	}
	var a spoke.Applied
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return spoke.Applied{}, false, fmt.Errorf("spoke state %s: %w", key, err)
	}
	if spec, ok := data[dataSpec]; ok {
		a.Spec = json.RawMessage(spec)
	}
	return a, true, nil
}

// Put implements spoke.StateStore. It returns once the record is stored.
func (s *State) Put(ctx context.Context, key string, a spoke.Applied) error {
	_, err := s.Swap(ctx, key, a, nil)
	return err
}

// Swap implements spoke.OperationStore: it stores a only if was accepts
// the record stored for key when it writes, in one compare-and-set on the
// ConfigMap's resourceVersion; a nil was accepts any.
func (s *State) Swap(ctx context.Context, key string, a spoke.Applied, was func(cur spoke.Applied, found bool) bool) (bool, error) {
	spec := a.Spec
	a.Spec = nil
	raw, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	swapped := false
	err = s.update(ctx, key, func(data map[string]string) bool {
		if was != nil { // Put writes without reading the record first
			cur, found, err := applied(data, key)
			if err != nil { // a record that does not parse counts as none
				cur, found = spoke.Applied{}, false
			}
			if !was(cur, found) {
				swapped = false
				return false
			}
		}
		swapped = true
		data[dataApplied] = string(raw)
		if spec != nil {
			data[dataSpec] = string(spec)
		} else {
			delete(data, dataSpec)
		}
		return true
	})
	return swapped && err == nil, err
}

// Marks implements spoke.MarkStore.
func (s *State) Marks(ctx context.Context) (map[string]spoke.DeployMark, error) {
	out := map[string]spoke.DeployMark{}
	err := s.list(ctx, "", func(data map[string]string) error {
		raw, ok := data[dataMark]
		if !ok {
			return nil
		}
		app, ok := appOf(data[dataKey])
		if !ok {
			return nil
		}
		var m spoke.DeployMark
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return fmt.Errorf("spoke state %s: %w", data[dataKey], err)
		}
		out[app] = m
		return nil
	})
	return out, err
}

// SaveMarks implements spoke.MarkStore, one ConfigMap per Application.
func (s *State) SaveMarks(ctx context.Context, set map[string]spoke.DeployMark, remove []string) error {
	for app, m := range set {
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := s.update(ctx, appKey(app), func(data map[string]string) bool { data[dataMark] = string(raw); return true }); err != nil {
			return err
		}
	}
	for _, app := range remove {
		if err := s.update(ctx, appKey(app), func(data map[string]string) bool { delete(data, dataMark); return true }); err != nil {
			return err
		}
	}
	return nil
}

// Prune implements spoke.Pruner.
func (s *State) Prune(ctx context.Context, forget func(key string, a spoke.Applied) bool) (int, error) {
	var keys []string
	err := s.list(ctx, LabelTransient+"=true", func(data map[string]string) error {
		key := data[dataKey]
		a, ok, err := applied(data, key)
		if err == nil && ok && a.Transient && forget(key, a) {
			keys = append(keys, key)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, key := range keys {
		// Asked again on the record as it is when it is deleted: it may
		// have been written since it was listed (an object re-created).
		forgot := false
		if err := s.update(ctx, key, func(data map[string]string) bool {
			a, ok, err := applied(data, key)
			if forgot = err == nil && ok && a.Transient && forget(key, a); !forgot {
				return false
			}
			delete(data, dataApplied)
			delete(data, dataSpec)
			return true
		}); err != nil {
			return n, err
		}
		if forgot {
			n++
		}
	}
	return n, nil
}

// OpenOperations implements spoke.OperationStore: the records of the
// operations queued or started, by state key.
func (s *State) OpenOperations(ctx context.Context) (map[string]spoke.Applied, error) {
	out := map[string]spoke.Applied{}
	err := s.list(ctx, LabelOperation+"=open", func(data map[string]string) error {
		key := data[dataKey]
		// A record that does not parse names no operation the agent can
		// run; it must not keep the others from running.
		if a, ok, err := applied(data, key); err == nil && ok && open(a) {
			out[key] = a
		}
		return nil
	})
	return out, err
}

// open reports whether a is the record of an operation that has not ended.
func open(a spoke.Applied) bool {
	return a.Phase == spoke.OperationQueued || a.Phase == spoke.OperationStarted
}

// appKey is the state key of Application namespace/name, whose ConfigMap
// holds its deployment mark.
func appKey(app string) string {
	ns, name, _ := strings.Cut(app, "/")
	return spoke.KindApplication + "." + ns + "." + name
}

// appOf is the inverse of appKey (a namespace has no dots).
func appOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, spoke.KindApplication+".")
	if !ok {
		return "", false
	}
	ns, name, ok := strings.Cut(rest, ".")
	return ns + "/" + name, ok
}

// list calls each with the data of every ConfigMap of the state that
// matches selector, a page at a time.
func (s *State) list(ctx context.Context, selector string, each func(data map[string]string) error) error {
	sel := LabelState + "=" + s.name
	if selector != "" {
		sel += "," + selector
	}
	opts := metav1.ListOptions{LabelSelector: sel, Limit: listPage}
	for {
		l, err := s.cms.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("read spoke state: %w", err)
		}
		for i := range l.Items {
			data, _, _ := unstructured.NestedStringMap(l.Items[i].Object, "data")
			if err := each(data); err != nil {
				return err
			}
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// update changes the data of key's ConfigMap with edit, creating the
// ConfigMap if needed and deleting it once it holds nothing but its key,
// and retries on conflicts with other writers.
func (s *State) update(ctx context.Context, key string, edit func(data map[string]string) bool) error {
	name := s.object(key)
	for {
		cm, err := s.cms.Get(ctx, name, metav1.GetOptions{})
		var data map[string]string
		switch {
		case apierrors.IsNotFound(err):
			cm, data = nil, map[string]string{dataKey: key}
		case err != nil:
			return fmt.Errorf("write spoke state: %w", err)
		default:
			if data, err = s.data(cm, key); err != nil {
				return err
			}
		}
		if !edit(data) {
			return nil // declined: nothing to write
		}
		switch {
		case len(data) == 1 && cm == nil:
			return nil
		case len(data) == 1:
			rv := cm.GetResourceVersion()
			err = s.cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		case cm == nil:
			_, err = s.cms.Create(ctx, s.configMap(name, data), metav1.CreateOptions{})
		default:
			next := s.configMap(name, data)
			next.SetResourceVersion(cm.GetResourceVersion())
			_, err = s.cms.Update(ctx, next, metav1.UpdateOptions{})
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

func (s *State) configMap(name string, data map[string]string) *unstructured.Unstructured {
	labels := map[string]any{argocd.LabelManaged: "true", LabelState: s.name}
	var a spoke.Applied
	if raw, ok := data[dataApplied]; ok && json.Unmarshal([]byte(raw), &a) == nil {
		if a.Transient {
			labels[LabelTransient] = "true"
		}
		if open(a) {
			labels[LabelOperation] = "open"
		}
	}
	d := make(map[string]any, len(data))
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "labels": labels}, "data": d}}
}
