package apicmd

import (
	"encoding/json"
	"fmt"

	"github.com/argosyproj/argosy/projector/read"
)

// Omitted says why the read API left a spec out of its answer ("too deep
// to show: 9998 levels, 60069 bytes"), or "" when raw is the spec itself.
// The read API puts a marker (read.OmittedSpec) where a spec too deep or
// too large to answer with would be, so that its answers always decode;
// the commands say so rather than print the marker alone.
func Omitted(raw json.RawMessage) string {
	o, ok := read.Omitted(raw)
	switch {
	case !ok:
		return ""
	case o.Reason == read.OmittedDepth:
		return fmt.Sprintf("too deep to show: %d levels, %d bytes (the read API answers with specs up to %d levels deep)",
			o.Depth, o.Bytes, read.MaxSpecDepth)
	case o.Reason == read.OmittedAnswer:
		return fmt.Sprintf("left out of this answer: %d bytes, past what one answer carries (%d bytes of specs); ask for fewer entries to see it",
			o.Bytes, read.MaxAnswerSpecBytes)
	}
	return fmt.Sprintf("too large to show: %d bytes (the read API answers with specs up to %d bytes)", o.Bytes, read.MaxSpecBytes)
}
