package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/argosyproj/argosy/hub/api"
)

// The shape of a manifest (how deep it nests, whether a key comes twice)
// is checked before anything reads it recursively: the YAML parser, the
// conversion to JSON, the CRD schema's walk and the strict decoding each
// recurse once per level, so a 2 MiB body of "[[[[" would cost them far
// more than it costs to refuse. The checks here read the input once,
// front to back, with a stack as deep as the limit allows and no deeper.

// yamlCeiling is how deep the cheap bound on a YAML manifest's nesting
// may go before the manifest is refused without being parsed. The bound
// counts every indentation step and flow bracket, so it may exceed the
// real depth (a continued plain scalar, a bracket inside a plain
// scalar); a manifest between MaxDepth and the ceiling is parsed and its
// real depth checked, which names the field.
const yamlCeiling = 4 * api.MaxDepth

// What Shape refuses: errTooDeep, errDuplicate and errTooMany as a
// *ShapeError naming the field, ErrTrailing wrapped with how much
// follows. Any other error is the JSON decoder's: the input is not JSON
// (a manifest may still be YAML).
var (
	errTooDeep   = errors.New("too deep")
	errDuplicate = errors.New("duplicate key")
	errTooMany   = errors.New("too many values")
	// ErrTrailing is anything but whitespace after the JSON value.
	ErrTrailing = errors.New("more than one JSON value")
	// ErrTooDeep, ErrDuplicate and ErrTooMany tell a *ShapeError's kind.
	ErrTooDeep, ErrDuplicate, ErrTooMany = errTooDeep, errDuplicate, errTooMany
)

// ShapeError is a field of a JSON document that Shape refuses. Field is
// its path (spec.sources[0].repoURL; "" for the document itself), as
// long as the input made it.
type ShapeError struct {
	Kind  error
	Field string
}

func (e *ShapeError) Error() string { return e.Field + ": " + e.Kind.Error() }
func (e *ShapeError) Unwrap() error { return e.Kind }

// shapeError is ShapeError by the name this package's code knows it.
type shapeError = ShapeError

// fieldError is the FieldError a shapeError of a manifest stands for,
// its path shortened to be read.
func (e *shapeError) fieldError() FieldError {
	field := "(manifest)"
	if e.Field != "" {
		field = clip(e.Field, maxPathBytes)
	}
	if errors.Is(e.Kind, errTooDeep) {
		return FieldError{Field: field, Reason: fmt.Sprintf("nested deeper than %d levels (objects and arrays, counted from the manifest's top): "+
			"flatten it, or give a deeply nested Helm value as a values file in the repository", api.MaxDepth)}
	}
	if errors.Is(e.Kind, errTooMany) {
		return FieldError{Field: field, Reason: fmt.Sprintf("the manifest holds more than %d keys and values (this one is past the limit): "+
			"give large Helm values as a values file in the repository", api.MaxValues)}
	}
	return FieldError{Field: field, Reason: "given twice: give each field once (a manifest's later value would otherwise silently win)"}
}

// frame is one open object or array of checkJSON's walk.
type frame struct {
	object bool
	// key is an object's current key, and keys all it has had; index is
	// an array's current element, and for an object 1 while the value of
	// its key is read, 0 while a key is awaited.
	key   string
	index int
	keys  map[string]struct{}
}

// checkJSON checks a manifest's JSON with Shape: at most api.MaxDepth
// levels and api.MaxValues keys and values.
func checkJSON(b []byte) error { return Shape(b, api.MaxDepth, api.MaxValues) }

// Shape reads one JSON document token by token, refusing, with the
// field's path, a value nested deeper than maxDepth, a key given twice in
// an object, or more than maxValues keys and values in all (0: no limit);
// and anything but whitespace after the document (ErrTrailing). Time and
// memory are linear in the input, and a refusal stops reading where it
// is. The hub checks request bodies with it, and this package manifests,
// before anything reads them recursively.
func Shape(b []byte, maxDepth, maxValues int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []frame
	for values := 0; ; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		delim, isDelim := tok.(json.Delim)
		if !isDelim || delim == '{' || delim == '[' {
			if values++; maxValues > 0 && values > maxValues {
				return &shapeError{Kind: errTooMany, Field: jsonPath(stack)}
			}
		}
		switch {
		case isDelim && (delim == '}' || delim == ']'):
			stack = stack[:len(stack)-1]
			advance(stack)
		case isDelim:
			if len(stack) >= maxDepth {
				return &shapeError{Kind: errTooDeep, Field: jsonPath(stack)}
			}
			stack = append(stack, frame{object: delim == '{'})
			continue
		case len(stack) > 0 && stack[len(stack)-1].object && !stack[len(stack)-1].expectsValue():
			top := &stack[len(stack)-1]
			key, _ := tok.(string) // an object's keys are strings
			if _, dup := top.keys[key]; dup {
				top.key = key
				return &shapeError{Kind: errDuplicate, Field: jsonPath(stack)}
			}
			if top.keys == nil {
				top.keys = map[string]struct{}{}
			}
			top.keys[key], top.key = struct{}{}, key
			top.index = 1 // a value follows
			continue
		default:
			advance(stack)
		}
		if len(stack) == 0 {
			if rest := bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
				return fmt.Errorf("%w: %d bytes follow the first, where only whitespace may", ErrTrailing, len(rest))
			}
			return nil
		}
	}
}

// expectsValue reports whether an object's next token is a value, its
// key read.
func (f *frame) expectsValue() bool { return f.index == 1 }

// advance moves the innermost open value past one element: an array to
// its next index, an object back to expecting a key.
func advance(stack []frame) {
	if len(stack) == 0 {
		return
	}
	top := &stack[len(stack)-1]
	if top.object {
		top.index = 0
		return
	}
	top.index++
}

// maxPathBytes bounds a path written in an error: keys may be long, and
// a path a hundred levels deep longer still.
const maxPathBytes = 240

// jsonPath writes the path of the value the walk is at: spec.sources[0];
// "" at the top.
func jsonPath(stack []frame) string {
	var b strings.Builder
	for i, f := range stack {
		switch {
		case f.object && f.key == "" && f.index == 0:
			// an object whose first key is still to come
		case f.object:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		default:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

// yamlDepthBound bounds the nesting of a YAML document from above without
// parsing it, in one pass: every indentation step of block context, every
// sequence and its item ("- ", and "? " alike) and every open flow
// bracket counts a level, and block scalars' lines, comments and quoted
// scalars count none. It stops at the first line (from 1) where the bound
// passes limit, and returns the bound and that line, or 0; the levels it
// holds open stay within the limit and one line's indicators.
func yamlDepthBound(b []byte, limit int) (bound, line int) {
	var (
		open  []level // the open block levels
		flow  int     // open flow brackets
		quote byte    // the quote of a quoted scalar that continues
		block = -1    // the indentation a block scalar's lines are deeper than
	)
	for n := 1; len(b) > 0; n++ {
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		indent := len(l) - len(bytes.TrimLeft(l, " "))
		blank := len(bytes.TrimSpace(l)) == 0
		if block >= 0 {
			if blank || indent > block {
				continue
			}
			block = -1
		}
		col := 0
		if quote == 0 && flow == 0 && !blank && l[indent] != '#' {
			open, col = blockLevels(open, l, indent, limit)
		}
		var peak int
		flow, quote, peak = scanLine(l[col:], flow, quote, limit-len(open))
		if quote == 0 && flow == 0 && peak == 0 && blockHeader(l[col:]) {
			block = indent
		}
		bound = max(bound, len(open)+peak)
		if bound > limit {
			return bound, n
		}
	}
	return bound, 0
}

// yamlValuesBound bounds from above, without parsing, how many keys and
// values a YAML document holds: each line with content holds at most one
// key or value in block context, and flow context separates the rest by
// commas. It counts commas in quoted scalars and comments too, so it can
// only overcount.
func yamlValuesBound(b []byte) int {
	n := bytes.Count(b, []byte(","))
	for len(b) > 0 {
		l := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			n++
		}
	}
	return n
}

// level is an open level of block context: the column of its nodes, and
// whether it is a sequence (whose items start with "- " in that column).
type level struct {
	col int
	seq bool
}

// blockLevels updates the open levels for a line of block context
// indented by indent, and returns them with the column where the line's
// content starts, after its "- " indicators (or after the first past
// limit: the line is too deep already).
func blockLevels(open []level, l []byte, indent, limit int) ([]level, int) {
	for len(open) > 0 && open[len(open)-1].col > indent {
		open = open[:len(open)-1]
	}
	top := func() (level, bool) {
		if len(open) == 0 {
			return level{}, false
		}
		return open[len(open)-1], true
	}
	if !indicator(l, indent) {
		for t, ok := top(); ok && t.col == indent && t.seq; t, ok = top() {
			open = open[:len(open)-1] // a sequence in its parent's column ended
		}
		if t, ok := top(); !ok || t.col < indent {
			open = append(open, level{col: indent})
		}
		return open, indent
	}
	if t, ok := top(); !ok || t.col < indent || !t.seq {
		open = append(open, level{col: indent, seq: true})
	}
	col := indent
	for {
		col++
		for col < len(l) && l[col] == ' ' {
			col++
		}
		if !indicator(l, col) || len(open) > limit {
			return append(open, level{col: col}), col
		}
		open = append(open, level{col: col, seq: true})
	}
}

// indicator reports whether a sequence entry's "-" or a complex key's "?"
// is at l[col].
func indicator(l []byte, col int) bool {
	return col < len(l) && (l[col] == '-' || l[col] == '?') && (col+1 == len(l) || l[col+1] == ' ')
}

// scanLine follows a YAML line's quotes, comments and flow brackets. It
// returns the open brackets and quote after the line, and the most
// brackets open within it; it stops as soon as more than room are open.
func scanLine(l []byte, flow int, quote byte, room int) (int, byte, int) {
	peak := flow
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0 && c == quote:
			if quote == '\'' && i+1 < len(l) && l[i+1] == '\'' {
				i++
				continue
			}
			quote = 0
		case quote != 0:
		case c == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return flow, 0, peak
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(quoteAfter, l[i-1]) >= 0):
			quote = c
		case c == '[' || c == '{':
			flow++
			peak = max(peak, flow)
			if peak > room {
				return flow, quote, peak
			}
		case c == ']' || c == '}':
			flow = max(flow-1, 0)
		}
	}
	return flow, quote, peak
}

// blockHeader reports whether a line of block context ends in a block
// scalar's header ("|", ">-", "|2+" …), before any comment.
func blockHeader(l []byte) bool {
	if i := bytes.Index(l, []byte(" #")); i >= 0 {
		l = l[:i]
	}
	l = bytes.TrimRight(l, " \t\r")
	tok := l[bytes.LastIndexAny(l, " \t")+1:]
	if len(tok) == 0 || (tok[0] != '|' && tok[0] != '>') {
		return false
	}
	return len(bytes.Trim(tok[1:], "+-0123456789")) == 0
}

// quoteAfter are the bytes after which a quote starts a quoted scalar;
// elsewhere it is part of a plain one (it's).
const quoteAfter = " \t[{,"

// yamlKeyPath finds the path of a mapping's key on a line of a YAML
// document, to name a key the YAML parser found twice there; it returns
// "" when it finds none. It is called once the document's depth is known
// to be bounded, and follows no aliases.
func yamlKeyPath(doc []byte, line int, key string) string {
	var root yaml.Node
	if yaml.Unmarshal(doc, &root) != nil {
		return ""
	}
	var walk func(n *yaml.Node, path string) string
	walk = func(n *yaml.Node, path string) string {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if p := walk(c, path); p != "" {
					return p
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if p := walk(c, path+"["+strconv.Itoa(i)+"]"); p != "" {
					return p
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				child := k.Value
				if path != "" {
					child = path + "." + k.Value
				}
				if k.Line == line && k.Value == key {
					return child
				}
				if p := walk(v, child); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(&root, "")
}
