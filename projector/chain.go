package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Chain hashes an audit entry onto the hash of the previous entry of its
// partition (empty for the first). The format is documented in
// docs/projector.md so that anyone can check a chain with a short script:
// SHA-256 over the previous hash and then each field of the entry, every one
// written as its length in bytes, a colon, the bytes and a newline, in this
// order: prevHash, topic, partition, offset, at (RFC 3339 with nanoseconds,
// UTC), eventId, type, cluster, kind, namespace, name, generation, actor,
// before, after. The result is lowercase hex.
func Chain(prevHash string, e AuditEntry) string {
	h := sha256.New()
	field := func(v string) {
		h.Write([]byte(strconv.Itoa(len(v))))
		h.Write([]byte{':'})
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	for _, v := range []string{
		prevHash, e.Topic, strconv.FormatInt(int64(e.Partition), 10), strconv.FormatInt(e.Offset, 10),
		e.At.UTC().Format(time.RFC3339Nano), e.EventID, e.Type, e.Cluster, e.Kind, e.Namespace, e.Name,
		strconv.FormatInt(e.Generation, 10), e.Actor, string(e.Before), string(e.After),
	} {
		field(v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BrokenLink is where an audit chain stops holding.
type BrokenLink struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
}

// Verify checks the entries of one partition, in offset order, and returns
// the first link that does not hold, or nil.
func Verify(entries []AuditEntry) *BrokenLink {
	for i := range entries {
		var prev *AuditEntry
		if i > 0 {
			prev = &entries[i-1]
		}
		if b := Link(prev, entries[i]); b != nil {
			return b
		}
	}
	return nil
}

// Link checks that e follows prev in its partition's chain (prev is nil for
// a partition's first entry), so that a long chain can be checked a page at
// a time.
func Link(prev *AuditEntry, e AuditEntry) *BrokenLink {
	broken := func(reason string) *BrokenLink {
		return &BrokenLink{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, Reason: reason}
	}
	prevHash := ""
	if prev != nil {
		prevHash = prev.Hash
	}
	switch {
	case prev != nil && (e.Topic != prev.Topic || e.Partition != prev.Partition):
		return broken("entries of several partitions given as one chain")
	case prev != nil && e.Offset <= prev.Offset:
		return broken("offsets out of order")
	case e.PrevHash != prevHash:
		return broken("prevHash does not match the previous entry's hash (an entry was removed, inserted or reordered)")
	case Chain(prevHash, e) != e.Hash:
		return broken("hash does not match the entry's content (the entry was changed)")
	}
	return nil
}
