package read_test

import (
	"testing"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

func TestFreshnessOf(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	beat := func(ago time.Duration) *projector.ClusterBeat { return &projector.ClusterBeat{At: now.Add(-ago)} }
	tests := []struct {
		name  string
		row   projector.ClusterRow
		state string
		age   time.Duration
		text  string
	}{
		{"fresh", projector.ClusterRow{Beat: beat(10 * time.Second)}, read.StateConnected, 10 * time.Second, "Connected"},
		{"just under three intervals", projector.ClusterRow{Beat: beat(89 * time.Second)}, read.StateConnected, 89 * time.Second, "Connected"},
		{"three intervals", projector.ClusterRow{Beat: beat(90 * time.Second)}, read.StateStale, 90 * time.Second, "Stale 1m30s"},
		{"57 hours", projector.ClusterRow{Beat: beat(57 * time.Hour)}, read.StateStale, 57 * time.Hour, "Stale 57h0m0s"},
		{"never", projector.ClusterRow{Registration: &projector.ClusterRegistration{Registered: true}}, read.StateUnknown, 0, "Unknown"},
		{"deregistered", projector.ClusterRow{Registration: &projector.ClusterRegistration{}, Beat: beat(time.Hour)}, read.StateDeregistered, time.Hour, "Deregistered"},
		{"clock behind the beat", projector.ClusterRow{Beat: beat(-time.Minute)}, read.StateConnected, 0, "Connected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := read.FreshnessOf(tt.row, now, 30*time.Second)
			if f.State != tt.state || f.Age != tt.age {
				t.Errorf("FreshnessOf = %+v, want state %s age %s", f, tt.state, tt.age)
			}
			secs := int64(f.Age / time.Second)
			if got := read.StateText(f.State, &secs); got != tt.text {
				t.Errorf("StateText = %q, want %q", got, tt.text)
			}
			if f.Current() != (tt.state == read.StateConnected) {
				t.Errorf("Current() = %v for %s", f.Current(), tt.state)
			}
		})
	}
}
