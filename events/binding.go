package events

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Header names of the CloudEvents Kafka protocol binding.
const (
	headerPrefix      = "ce_"
	headerContentType = "content-type"
	// ExtPartitionKey is the partitioning extension; its value is the record key.
	ExtPartitionKey = "partitionkey"
)

var specs = spec.WithPrefix(headerPrefix)

// Message is a Kafka record seen as a CloudEvents binding.Message. It reads
// binary content mode (ce_ headers) and structured content mode (a
// content-type of application/cloudevents+json).
type Message struct {
	Record *kgo.Record

	format      format.Format
	version     spec.Version
	contentType string
}

var (
	_ binding.Message               = (*Message)(nil)
	_ binding.MessageMetadataReader = (*Message)(nil)
)

// NewMessage wraps a record. A record that is neither binary nor structured
// reads as binding.EncodingUnknown.
func NewMessage(r *kgo.Record) *Message {
	m := &Message{Record: r}
	for _, h := range r.Headers {
		switch {
		case strings.EqualFold(h.Key, headerContentType):
			m.contentType = string(h.Value)
		case h.Key == specs.PrefixedSpecVersionName():
			m.version = specs.Version(string(h.Value))
		}
	}
	if f := format.Lookup(m.contentType); f != nil && format.IsFormat(m.contentType) {
		m.format, m.version = f, nil
	}
	return m
}

// ReadEncoding implements binding.MessageReader.
func (m *Message) ReadEncoding() binding.Encoding {
	switch {
	case m.format != nil:
		return binding.EncodingStructured
	case m.version != nil:
		return binding.EncodingBinary
	}
	return binding.EncodingUnknown
}

// ReadStructured implements binding.MessageReader.
func (m *Message) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.format == nil {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, m.format, bytes.NewReader(m.Record.Value))
}

// ReadBinary implements binding.MessageReader. The record key becomes the
// partitionkey extension when no ce_partitionkey header carries it.
func (m *Message) ReadBinary(ctx context.Context, w binding.BinaryWriter) error {
	if m.version == nil {
		return binding.ErrNotBinary
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	sawKey := false
	for _, h := range m.Record.Headers {
		var err error
		switch {
		case strings.HasPrefix(h.Key, headerPrefix):
			name := strings.ToLower(strings.TrimPrefix(h.Key, headerPrefix))
			if attr := m.version.Attribute(h.Key); attr != nil {
				err = w.SetAttribute(attr, string(h.Value))
			} else {
				sawKey = sawKey || name == ExtPartitionKey
				err = w.SetExtension(name, string(h.Value))
			}
		case strings.EqualFold(h.Key, headerContentType):
			err = w.SetAttribute(m.version.AttributeFromKind(spec.DataContentType), string(h.Value))
		}
		if err != nil {
			return fmt.Errorf("header %q: %w", h.Key, err)
		}
	}
	if !sawKey && m.Record.Key != nil {
		if err := w.SetExtension(ExtPartitionKey, string(m.Record.Key)); err != nil {
			return err
		}
	}
	if m.Record.Value != nil {
		// A *bytes.Buffer is taken as it is, where a reader would be copied.
		if err := w.SetData(bytes.NewBuffer(m.Record.Value)); err != nil {
			return err
		}
	}
	return w.End(ctx)
}

// GetAttribute implements binding.MessageMetadataReader.
func (m *Message) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	if m.version == nil {
		return nil, nil
	}
	attr := m.version.AttributeFromKind(k)
	if attr == nil {
		return nil, nil
	}
	name := attr.PrefixedName()
	if k == spec.DataContentType {
		name = headerContentType
	}
	if v, ok := m.header(name); ok {
		return attr, v
	}
	return attr, nil
}

// GetExtension implements binding.MessageMetadataReader.
func (m *Message) GetExtension(name string) any {
	if v, ok := m.header(headerPrefix + name); ok {
		return v
	}
	return nil
}

func (m *Message) header(name string) (string, bool) {
	for _, h := range m.Record.Headers {
		if strings.EqualFold(h.Key, name) {
			return string(h.Value), true
		}
	}
	return "", false
}

// Finish implements binding.Message. Offsets are committed by Reader, not here.
func (m *Message) Finish(error) error { return nil }

// WriteRecord writes a binding.Message into r in binary content mode: one
// ce_ header per attribute, content-type, data as the value, and the
// partitionkey extension as the key.
func WriteRecord(ctx context.Context, m binding.Message, r *kgo.Record, transformers ...binding.Transformer) error {
	w := (*recordWriter)(r)
	ctx = binding.WithForceBinary(ctx)
	_, err := binding.Write(ctx, m, nil, w, transformers...)
	if err != nil {
		return fmt.Errorf("write cloudevent to record: %w", err)
	}
	return nil
}

// EventRecord returns a new record holding e in binary content mode.
func EventRecord(ctx context.Context, e *event.Event) (*kgo.Record, error) {
	r := &kgo.Record{Headers: make([]kgo.RecordHeader, 0, 12)}
	if err := WriteRecord(ctx, (*binding.EventMessage)(e), r); err != nil {
		return nil, err
	}
	return r, nil
}

type recordWriter kgo.Record

func (w *recordWriter) Start(context.Context) error { return nil }
func (w *recordWriter) End(context.Context) error   { return nil }

func (w *recordWriter) SetData(data io.Reader) error {
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	w.Value = b
	return nil
}

func (w *recordWriter) SetAttribute(attr spec.Attribute, value any) error {
	name := headerPrefix + attr.Name()
	if attr.Kind() == spec.DataContentType {
		name = headerContentType
	}
	return w.setHeader(name, value)
}

func (w *recordWriter) SetExtension(name string, value any) error {
	if name == ExtPartitionKey {
		if value == nil {
			w.Key = nil
		} else {
			s, err := types.Format(value)
			if err != nil {
				return err
			}
			w.Key = []byte(s)
		}
	}
	return w.setHeader(headerPrefix+name, value)
}

func (w *recordWriter) setHeader(name string, value any) error {
	w.Headers = deleteHeader(w.Headers, name)
	if value == nil {
		return nil
	}
	s, err := types.Format(value)
	if err != nil {
		return fmt.Errorf("attribute %s: %w", name, err)
	}
	w.Headers = append(w.Headers, kgo.RecordHeader{Key: name, Value: []byte(s)})
	return nil
}

func deleteHeader(hs []kgo.RecordHeader, name string) []kgo.RecordHeader {
	out := hs[:0]
	for _, h := range hs {
		if h.Key != name {
			out = append(out, h)
		}
	}
	return out
}
