// Package argoproto writes the answers the mirror's UI proxy gives the
// argocd CLI's gRPC calls: Argo CD's protobuf messages, from the JSON in
// Argo CD's shapes that clusters answer live questions with and that
// Argo CD's API server answers its REST calls with; and reads the spec an
// UpdateSpec call sends and the Application an Update call sends. It links Argo CD's
// API types (their generated encoders), as hub/internal/validate does, so
// that only argosy-hub links Argo CD's module.
package argoproto

import (
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"google.golang.org/protobuf/encoding/protowire"
)

// marshaler is one of Argo CD's generated messages.
type marshaler interface{ Marshal() ([]byte, error) }

func encode(what string, js []byte, m marshaler) ([]byte, error) {
	if err := json.Unmarshal(js, m); err != nil {
		return nil, fmt.Errorf("the %s does not decode: %w", what, err)
	}
	b, err := m.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode the %s: %w", what, err)
	}
	return b, nil
}

// Tree is an ApplicationTree (JSON) as its message.
func Tree(js []byte) ([]byte, error) { return encode("tree", js, &v1alpha1.ApplicationTree{}) }

// Application is an Application (JSON) as its message.
func Application(js []byte) ([]byte, error) {
	return encode("Application", js, &v1alpha1.Application{})
}

// ManagedResources is a ManagedResourcesResponse (JSON: {"items": [...]}
// of ResourceDiffs) as its message: each item, field 1.
func ManagedResources(js []byte) ([]byte, error) {
	var d struct{ Items []v1alpha1.ResourceDiff }
	if err := json.Unmarshal(js, &d); err != nil {
		return nil, fmt.Errorf("the managed resources do not decode: %w", err)
	}
	var b []byte
	for i := range d.Items {
		item, err := d.Items[i].Marshal()
		if err != nil {
			return nil, fmt.Errorf("encode the managed resources: %w", err)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, item)
	}
	return b, nil
}

// SpecJSON is an ApplicationSpec message as JSON: the spec an UpdateSpec
// call sends.
func SpecJSON(b []byte) ([]byte, error) {
	var spec v1alpha1.ApplicationSpec
	if err := spec.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("the spec does not decode: %w", err)
	}
	js, err := json.Marshal(&spec)
	if err != nil {
		return nil, fmt.Errorf("encode the spec: %w", err)
	}
	return js, nil
}

// ApplicationJSON is an Application message as JSON: the Application an
// Update call sends.
func ApplicationJSON(b []byte) ([]byte, error) {
	var app v1alpha1.Application
	if err := app.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("the Application does not decode: %w", err)
	}
	js, err := json.Marshal(&app)
	if err != nil {
		return nil, fmt.Errorf("encode the Application: %w", err)
	}
	return js, nil
}
