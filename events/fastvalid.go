package events

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/argosyproj/argosy/schemas"
)

// conformsFast reports, without the JSON Schema validator, that data is
// valid against its schema, for the types a projector reads most
// (application status deltas, alone or in batches, and heartbeats). It answers true only when
// data is exactly the encoding json.Marshal gives v, v having been decoded
// from data, and v passes checks written from the schema; then the schema
// accepts data too. Anything else answers false and goes to the validator,
// which alone explains a rejection. FuzzConformsFastImpliesSchema checks
// the implication against the validator.
func conformsFast(v any, data []byte) bool {
	var ok bool
	switch v := v.(type) {
	case *schemas.ApplicationStatusChanged:
		ok = appStatusConforms(v)
	case *schemas.ApplicationStatusBatch:
		ok = appStatusBatchConforms(v)
	case *schemas.Heartbeat:
		ok = heartbeatConforms(v)
	}
	if !ok {
		return false
	}
	// The canonical encoding rules out what decoding into v hides: members
	// the struct does not have, keys in another case, nulls, duplicates,
	// escapes and number forms.
	canonical, err := json.Marshal(v)
	return err == nil && bytes.Equal(canonical, data)
}

// appStatusConforms checks what io.argosy.status.application.changed.v1
// requires of the members v encodes.
func appStatusConforms(v *schemas.ApplicationStatusChanged) bool {
	switch {
	case !dnsLabel(v.Cluster), v.Namespace != "" && !dnsLabel(v.Namespace), !dnsSubdomain(v.Name),
		v.Generation < 0, v.Seq < 0,
		v.Sync != nil && v.Sync.Status == "",
		v.Health != nil && v.Health.Status == "",
		v.Operation != nil, // its times take the validator's date-time check
		v.Resources != nil && (v.Resources.Total < 0 || !counts(v.Resources.ByKind) || !counts(v.Resources.ByHealth) ||
			len(v.Resources.Items) > schemas.MaxResourceItems):
		return false
	}
	for _, c := range v.Conditions {
		if c.Type == "" {
			return false
		}
	}
	if v.Resources != nil {
		for _, r := range v.Resources.Items {
			if r.Kind == "" || r.Name == "" || r.Health != nil && r.Health.Status == "" {
				return false
			}
		}
	}
	return true
}

// appStatusBatchConforms checks what
// io.argosy.status.applications.changed.v1 requires of the members v
// encodes.
func appStatusBatchConforms(v *schemas.ApplicationStatusBatch) bool {
	if !dnsLabel(v.Cluster) || len(v.Deltas) == 0 || len(v.Deltas) > schemas.MaxBatchDeltas {
		return false
	}
	for i := range v.Deltas {
		if !appStatusConforms(&v.Deltas[i]) {
			return false
		}
	}
	return true
}

// heartbeatConforms checks what io.argosy.status.heartbeat.v1 requires of
// the members v encodes.
func heartbeatConforms(v *schemas.Heartbeat) bool {
	return dnsLabel(v.Cluster) && v.AgentVersion != "" && (v.Mode == schemas.ModeManaged || v.Mode == schemas.ModeAutonomous) &&
		v.ConfigOffset >= 0 && v.Applications >= 0 && v.Seq >= 0 && v.ConfigLag >= 0 &&
		counts(v.ApplicationsBySync) && counts(v.ApplicationsByHealth)
}

// counts reports whether every value of m is at least zero.
func counts(m map[string]int) bool {
	for _, n := range m {
		if n < 0 {
			return false
		}
	}
	return true
}

// dnsLabel matches the schemas' cluster and namespace rule: at most 63
// characters, ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$.
func dnsLabel(s string) bool { return len(s) <= 63 && labelShape(s) }

// dnsSubdomain matches the schemas' name rule: 1 to 253 characters, labels
// of labelShape joined by dots. Valid names are ASCII, so bytes count as
// the characters the schema counts.
func dnsSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !labelShape(label) {
			return false
		}
	}
	return true
}

// labelShape matches ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$.
func labelShape(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
