package live

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/argosyproj/argosy/schemas"
)

// Diff, ResourceDiff are the wire shape of a diff answer
// (schemas.ApplicationDiff): Argo CD's ManagedResourcesResponse.
type (
	Diff         = schemas.ApplicationDiff
	ResourceDiff = schemas.ResourceDiff
)

// Diff compares each of app's managed resources (its .status.resources)
// with the state Argo CD last applied to it, as the resource's
// last-applied-configuration annotation holds it: the live values at the
// fields that state sets, so that defaults the API server filled in and
// status do not count as changes. A resource with no such annotation
// (applied server-side) has no target state and is not Modified; a
// missing one is. A Secret's values are masked in both states.
//
// It is ErrAppNotFound if there is no such Application, and ErrTooLarge
// past the Source's bound of nodes or the bound of an answer
// (schemas.MaxQueryAnswer).
func (s *Source) Diff(ctx context.Context, app string) (*Diff, error) {
	a, err := s.application(ctx, app)
	if err != nil {
		return nil, err
	}
	items, _, err := unstructured.NestedSlice(a.Object, "status", "resources")
	if err != nil {
		return nil, fmt.Errorf("application %s: status.resources: %w", app, err)
	}
	if len(items) > s.opts.maxNodes {
		return nil, fmt.Errorf("application %s manages more than %d resources: %w", app, s.opts.maxNodes, ErrTooLarge)
	}
	out := &Diff{Items: make([]ResourceDiff, 0, len(items))}
	size := 0
	for _, item := range items {
		r, rs, err := statusResource(item)
		if err != nil {
			return nil, fmt.Errorf("application %s: status.resources: %w", app, err)
		}
		d := ResourceDiff{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, SyncStatus: rs.Status}
		obj, err := s.get(ctx, r)
		switch {
		case apierrors.IsNotFound(err):
			d.NormalizedLiveState, d.Modified = "null", true
		case err != nil:
			return nil, err
		default:
			if err := compare(&d, obj); err != nil {
				return nil, fmt.Errorf("diff %s: %w", r, err)
			}
		}
		if size += len(d.TargetState) + len(d.NormalizedLiveState); size > schemas.MaxQueryAnswer {
			return nil, fmt.Errorf("diff of application %s passes %d bytes: %w", app, schemas.MaxQueryAnswer, ErrTooLarge)
		}
		out.Items = append(out.Items, d)
	}
	return out, nil
}

// compare fills d from the live object obj.
func compare(d *ResourceDiff, obj *unstructured.Unstructured) error {
	d.ResourceVersion = obj.GetResourceVersion()
	var target map[string]any
	if raw := obj.GetAnnotations()[lastApplied]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &target); err != nil {
			target = nil // not an object: the cluster holds no usable target state
		}
	}
	secret := obj.GroupVersionKind().Group == "" && obj.GetKind() == "Secret"
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", lastApplied)
	// Numbers as JSON decodes them, so that live and target compare.
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	var liveObj map[string]any
	if err := json.Unmarshal(b, &liveObj); err != nil {
		return err
	}
	if target == nil {
		if secret {
			maskValues(liveObj, nil)
		}
		return encode(&d.NormalizedLiveState, liveObj)
	}
	dropNulls(target)
	if secret {
		stringDataToData(target)
	}
	norm, _ := project(liveObj, target).(map[string]any)
	d.Modified = !reflect.DeepEqual(norm, target)
	if secret {
		maskValues(norm, target)
	}
	if err := encode(&d.TargetState, target); err != nil {
		return err
	}
	return encode(&d.NormalizedLiveState, norm)
}

// project is live at the fields target sets: for an object, the keys of
// target that live has; for a list, each item projected on target's item
// at its index, and items past target's kept whole; any other value, live.
func project(live, target any) any {
	switch t := target.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := make(map[string]any, len(t))
		for k, tv := range t {
			if lv, ok := l[k]; ok {
				out[k] = project(lv, tv)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live
		}
		out := make([]any, len(l))
		for i, lv := range l {
			if i < len(t) {
				lv = project(lv, t[i])
			}
			out[i] = lv
		}
		return out
	}
	return live
}

// dropNulls removes the null values of an applied object, which set
// nothing (such as the creationTimestamp: null serializers write).
func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			dropNulls(x)
		}
	case []any:
		for _, x := range t {
			dropNulls(x)
		}
	}
}

// stringDataToData moves a Secret's stringData into its data, base64 as
// the API server stores it, so that it compares with the live Secret.
func stringDataToData(secret map[string]any) {
	sd, ok := secret["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, _ := secret["data"].(map[string]any)
	if data == nil {
		data = make(map[string]any, len(sd))
	}
	for k, v := range sd {
		if str, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(str))
		}
	}
	secret["data"] = data
	delete(secret, "stringData")
}

// maskValues masks the values of a Secret's data and stringData in live
// and, when there is one, in target: a value equal in both gets SecretMask
// on both sides, a value that differs SecretMask in target and a longer
// mask in live, so that a change shows without its values. With no
// target, every value is SecretMask.
func maskValues(live, target map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		lv, _ := live[field].(map[string]any)
		var tv map[string]any
		if target != nil {
			tv, _ = target[field].(map[string]any)
		}
		for k, v := range lv {
			if t, ok := tv[k]; target == nil || ok && reflect.DeepEqual(t, v) {
				lv[k] = SecretMask
			} else {
				lv[k] = SecretMask + "+"
			}
		}
		for k := range tv {
			tv[k] = SecretMask
		}
		if _, ok := live[field]; ok && lv == nil {
			delete(live, field) // not a map of values: show nothing of it
		}
		if target != nil && tv == nil {
			delete(target, field)
		}
	}
}

func encode(to *string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	*to = string(b)
	return nil
}
