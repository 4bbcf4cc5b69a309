package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/schemas"
)

// TestCheckEvent: an event the caller's input makes too large for the
// log is a 413 saying its size and the limit, one its schema refuses a
// 400, and the same errors from a publish are answered alike rather than
// as 500.
func TestCheckEvent(t *testing.T) {
	subj := events.Subject{Cluster: "edge-1", Kind: schemas.SubjectApplications, Namespace: "argocd", Name: "web"}
	upsert := func(project string, specBytes int) schemas.ApplicationUpserted {
		spec, _ := json.Marshal(map[string]string{"big": strings.Repeat("x", specBytes)})
		return schemas.ApplicationUpserted{Resource: schemas.Resource{Cluster: "edge-1", Namespace: "argocd", Name: "web", Generation: 1},
			Project: project, Spec: spec}
	}
	tests := []struct {
		name   string
		data   schemas.ApplicationUpserted
		status int // 0 when it fits
		says   string
	}{
		{"fits", upsert("default", 1000), 0, ""},
		{"fits with room for the signature", upsert("default", events.MaxEventBytes-eventHeadroom-2000), 0, ""},
		{"over the limit", upsert("default", events.MaxEventBytes), http.StatusRequestEntityTooLarge, "limit of 524288 bytes"},
		{"a project the schema refuses", upsert("Not_A_Name", 10), http.StatusBadRequest, "schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newEvent(events.TypeApplicationUpserted, subj, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			err = checkEvent(t.Context(), e)
			if tc.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != tc.status || !strings.Contains(ae.body.Error, tc.says) {
				t.Errorf("checkEvent = %v, want %d saying %q", err, tc.status, tc.says)
			}
		})
	}
	for _, tc := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("publish x: %w", &events.DecodeError{Kind: events.ErrOversized, Err: errors.New("600000 bytes, limit 524288")}), http.StatusRequestEntityTooLarge},
		{fmt.Errorf("publish x: %w", &events.DecodeError{Kind: events.ErrSchema}), http.StatusBadRequest},
		{errors.New("broker gone"), 0},
	} {
		ae := eventError(tc.err)
		if (ae == nil && tc.status != 0) || (ae != nil && ae.status != tc.status) {
			t.Errorf("eventError(%v) = %v, want %d", tc.err, ae, tc.status)
		}
	}
}

// TestEventLimitIsTheLogs holds the limit the API documents to the one the
// events package enforces.
func TestEventLimitIsTheLogs(t *testing.T) {
	if api.MaxEventBytes != events.MaxEventBytes {
		t.Errorf("api.MaxEventBytes %d, events.MaxEventBytes %d", api.MaxEventBytes, events.MaxEventBytes)
	}
}
