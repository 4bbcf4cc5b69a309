package argocd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// maxDriftFields bounds the paths a drift report lists.
const maxDriftFields = 20

// Drift returns the spec fields of an Argosy-managed object that differ from
// the desired spec recorded in its argosy.dev/desired-spec annotation, as
// JSON paths ("spec.source.targetRevision"), sorted. It returns nil for an
// object without that annotation (not managed) or without drift.
func Drift(u *unstructured.Unstructured) []string {
	desired, ok := desiredSpec(u)
	if !ok {
		return nil
	}
	cur, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec")
	var paths []string
	diffPaths("spec", normalize(desired), normalize(cur), &paths)
	sort.Strings(paths)
	if len(paths) > maxDriftFields {
		paths = append(paths[:maxDriftFields], "…")
	}
	return paths
}

func desiredSpec(u *unstructured.Unstructured) (map[string]any, bool) {
	raw, ok := u.GetAnnotations()[AnnotationDesiredSpec]
	if !ok {
		return nil, false
	}
	var spec map[string]any
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return nil, false
	}
	return spec, true
}

// normalize makes numbers compare equal whatever their Go type, by a JSON
// round trip.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

func diffPaths(path string, want, got any, out *[]string) {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if !wok || !gok {
		if !reflect.DeepEqual(want, got) {
			*out = append(*out, path)
		}
		return
	}
	keys := map[string]bool{}
	for k := range wm {
		keys[k] = true
	}
	for k := range gm {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		diffPaths(path+"."+k, wm[k], gm[k], out)
	}
}

// Revert puts back the desired spec of a managed Application that was
// edited in the cluster, and returns the fields it restored (none if there
// was no drift).
func (a *Client) Revert(ctx context.Context, ref Ref) ([]string, error) {
	ri, err := a.resource(ref.Kind, ref.Namespace)
	if err != nil {
		return nil, err
	}
	cur, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // deleted meanwhile; the hub's next event decides
	}
	if err != nil {
		return nil, fmt.Errorf("revert %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	fields, err := a.restoreLatest(ctx, ri, cur)
	if err != nil {
		return nil, fmt.Errorf("revert %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return fields, nil
}

// restoreLatest is restore of cur, then of the object read again each time
// another writer (Argo CD's controller writes the Application's status)
// changed it in between.
func (a *Client) restoreLatest(ctx context.Context, ri dynamic.ResourceInterface, cur *unstructured.Unstructured) ([]string, error) {
	var fields []string
	name := cur.GetName()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			var err error
			if cur, err = ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		var err error
		fields, err = a.restore(ctx, ri, cur)
		cur = nil
		return err
	})
	return fields, err
}

// restore replaces the spec of cur with its desired spec when they differ,
// with an update that fails on a concurrent write (the caller retries). It
// returns the fields that differed. If the API server stores the desired
// spec in another form (it prunes fields its schema does not know, for
// instance), the stored form becomes the desired one, so that the spoke
// never fights the API server.
func (a *Client) restore(ctx context.Context, ri dynamic.ResourceInterface, cur *unstructured.Unstructured) ([]string, error) {
	fields := Drift(cur)
	if len(fields) == 0 {
		return nil, nil
	}
	desired, _ := desiredSpec(cur)
	cur = cur.DeepCopy()
	cur.Object["spec"] = desired
	got, err := ri.Update(ctx, cur, metav1.UpdateOptions{FieldManager: a.manager})
	if err != nil {
		return nil, err
	}
	if len(Drift(got)) == 0 {
		return fields, nil
	}
	stored, err := json.Marshal(normalize(got.Object["spec"]))
	if err != nil {
		return nil, err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": got.GetResourceVersion(),
		"annotations":     map[string]any{AnnotationDesiredSpec: string(stored)}}})
	if err != nil {
		return nil, err
	}
	if _, err := ri.Patch(ctx, got.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: a.manager}); err != nil {
		return nil, err
	}
	return fields, nil
}
