package argocd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// maxDriftFields bounds the paths a drift report lists.
const maxDriftFields = 20

// SpecHash is a digest of spec (JSON bytes, or a decoded JSON value such as
// an unstructured object's spec) in canonical form: sorted keys, numbers
// as JSON numbers. Two specs have the same hash exactly when they are
// equal as JSON values. It is "" for a spec that is not JSON.
func SpecHash(spec any) string {
	canon, err := canonical(spec)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// canonical is spec as canonical JSON.
func canonical(spec any) ([]byte, error) {
	if raw, ok := spec.(json.RawMessage); ok {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		spec = v
	}
	return json.Marshal(normalize(spec))
}

// Diff returns the fields of current, an object's spec, that differ from
// desired, as JSON paths ("spec.source.targetRevision"), sorted; nil when
// they are equal.
func Diff(desired json.RawMessage, current any) []string {
	var want any
	if err := json.Unmarshal(desired, &want); err != nil {
		return []string{"spec"}
	}
	var paths []string
	diffPaths("spec", want, normalize(current), &paths)
	sort.Strings(paths)
	if len(paths) > maxDriftFields {
		paths = append(paths[:maxDriftFields], "…")
	}
	return paths
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

// Revert puts back desired, the spec the agent applied, on a managed
// Application that was edited in the cluster. It returns the fields it
// restored (none if there was no drift) and, when the API server stores
// desired in another form (it prunes fields its schema does not know, for
// instance), that stored form: the caller takes it as the desired spec
// from then on, so that the agent never fights the API server.
func (a *Client) Revert(ctx context.Context, ref Ref, desired json.RawMessage) (fields []string, stored json.RawMessage, err error) {
	ri, err := a.resource(ref.Kind, ref.Namespace)
	if err != nil {
		return nil, nil, err
	}
	cur, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if err == nil {
		fields, stored, err = a.putBack(ctx, ri, cur, desired)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil, nil // deleted meanwhile; the hub's next event decides
	}
	if err != nil {
		return nil, nil, fmt.Errorf("revert %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
	}
	return fields, stored, nil
}

// putBack replaces the spec of cur with desired when they differ, with
// updates that fail on a concurrent write (Argo CD's controller writes the
// Application's status), reading the object again after each. It returns
// the fields that differed and, if the API server stores desired in
// another form, that form as canonical JSON.
func (a *Client) putBack(ctx context.Context, ri dynamic.ResourceInterface, cur *unstructured.Unstructured, desired json.RawMessage) (fields []string, stored json.RawMessage, err error) {
	var spec map[string]any
	if err := json.Unmarshal(desired, &spec); err != nil || spec == nil {
		return nil, nil, errors.New("the desired spec is not a JSON object")
	}
	name := cur.GetName()
	err = retry.RetryOnConflict(conflictBackoff, func() error {
		if cur == nil {
			var err error
			if cur, err = ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		if fields = Diff(desired, cur.Object["spec"]); len(fields) == 0 {
			return nil
		}
		next := cur.DeepCopy()
		cur = nil
		next.Object["spec"] = spec
		got, err := ri.Update(ctx, next, metav1.UpdateOptions{FieldManager: a.manager})
		if err != nil {
			return err
		}
		if len(Diff(desired, got.Object["spec"])) > 0 {
			stored, err = canonical(got.Object["spec"])
		}
		return err
	})
	return fields, stored, err
}
