package spoke_test

import (
	"testing"

	"github.com/argosyproj/argosy/schemas"
	"github.com/argosyproj/argosy/spoke"
)

func TestDelta(t *testing.T) {
	synced := &schemas.SyncStatus{Status: "Synced", Revision: "a"}
	healthy := &schemas.HealthStatus{Status: "Healthy"}
	base := spoke.AppStatus{Name: "x", Generation: 1, Sync: synced, Health: healthy}
	tests := []struct {
		name        string
		prev, cur   spoke.AppStatus
		full        bool
		wantChanged bool
		want        schemas.ApplicationStatusChanged
	}{
		{"first is full", spoke.AppStatus{}, base, true, true, schemas.ApplicationStatusChanged{Full: true, Sync: synced, Health: healthy}},
		{"nothing changed", base, base, false, false, schemas.ApplicationStatusChanged{}},
		{"health only", base, func() spoke.AppStatus {
			c := base
			c.Health = &schemas.HealthStatus{Status: "Degraded", Message: "x"}
			return c
		}(), false, true, schemas.ApplicationStatusChanged{Health: &schemas.HealthStatus{Status: "Degraded", Message: "x"}}},
		{"new generation alone", base, func() spoke.AppStatus { c := base; c.Generation = 2; return c }(), false, true, schemas.ApplicationStatusChanged{}},
		{"deleted", base, spoke.AppStatus{Name: "x", Deleted: true}, false, true, schemas.ApplicationStatusChanged{Deleted: true}},
		{"deleted again", spoke.AppStatus{Deleted: true}, spoke.AppStatus{Deleted: true}, false, false, schemas.ApplicationStatusChanged{Deleted: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := spoke.Delta(tc.prev, tc.cur, tc.full)
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if spoke.DeltaSize(got) != spoke.DeltaSize(tc.want) || (got.Sync == nil) != (tc.want.Sync == nil) ||
				(got.Health == nil) != (tc.want.Health == nil) || got.Deleted != tc.want.Deleted || got.Full != tc.want.Full {
				t.Errorf("delta %+v, want %+v", got, tc.want)
			}
		})
	}
}
