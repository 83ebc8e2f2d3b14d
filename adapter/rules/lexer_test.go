package rules

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// splitPromQL splits rendered PromQL into its skeleton — the text outside string
// literals, each literal replaced by "" — and the literals' unquoted values. It follows
// the PromQL lexer: a string opened by ", ' or ` ends at the first unescaped matching
// quote; a raw newline or the end of input inside a (non-raw) string is an error; only
// the escapes the lexer knows are accepted; the literal must be valid UTF-8; the value
// is what strconv.Unquote (PromQL's unquoting) makes of it.
func splitPromQL(s string) (skeleton string, values []string, err error) {
	var sk strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '"' && c != '\'' && c != '`' {
			sk.WriteByte(c)
			continue
		}
		end, err := lexString(s, i)
		if err != nil {
			return "", nil, err
		}
		lit := s[i : end+1]
		if !utf8.ValidString(lit) {
			return "", nil, fmt.Errorf("invalid UTF-8 in %q", lit)
		}
		v, err := unquote(lit)
		if err != nil {
			return "", nil, fmt.Errorf("unquote %q: %w", lit, err)
		}
		values = append(values, v)
		sk.WriteString(`""`)
		i = end
	}
	return sk.String(), values, nil
}

// unquote decodes a string literal as Prometheus does (strconv.Unquote rules, but
// single-quoted strings may hold any number of characters).
func unquote(lit string) (string, error) {
	q, body := lit[0], lit[1:len(lit)-1]
	if q == '`' {
		return body, nil
	}
	var sb strings.Builder
	for body != "" {
		r, multibyte, tail, err := strconv.UnquoteChar(body, q)
		if err != nil {
			return "", err
		}
		if r < utf8.RuneSelf || !multibyte && r < 256 {
			sb.WriteByte(byte(r))
		} else {
			sb.WriteRune(r)
		}
		body = tail
	}
	return sb.String(), nil
}

// lexString returns the index of the quote closing the string that opens at s[start].
func lexString(s string, start int) (int, error) {
	q := s[start]
	for j := start + 1; j < len(s); j++ {
		switch {
		case s[j] == q:
			return j, nil
		case q == '`':
		case s[j] == '\n':
			return 0, fmt.Errorf("raw newline in string at %d", j)
		case s[j] == '\\':
			n, err := escapeLen(s[j+1:], q)
			if err != nil {
				return 0, err
			}
			j += n
		}
	}
	return 0, fmt.Errorf("unterminated string at %d", start)
}

// escapeLen returns how many bytes after a backslash the PromQL lexer's escape takes.
func escapeLen(rest string, quote byte) (int, error) {
	if rest == "" {
		return 0, fmt.Errorf("escape at end of input")
	}
	digits := func(n int, valid string) (int, error) {
		if len(rest) < n+1 {
			return 0, fmt.Errorf("short escape %q", rest)
		}
		for _, d := range rest[1 : n+1] {
			if !strings.ContainsRune(valid, d) {
				return 0, fmt.Errorf("bad escape %q", rest[:n+1])
			}
		}
		return n + 1, nil
	}
	const hex = "0123456789abcdefABCDEF"
	switch c := rest[0]; {
	case c == quote || strings.IndexByte(`abfnrtv\`, c) >= 0:
		return 1, nil
	case c >= '0' && c <= '7':
		return digits(2, "01234567")
	case c == 'x':
		return digits(2, hex)
	case c == 'u':
		return digits(4, hex)
	case c == 'U':
		return digits(8, hex)
	}
	return 0, fmt.Errorf("unknown escape %q", rest[:1])
}

func TestSplitPromQL(t *testing.T) {
	tests := []struct {
		in       string
		skeleton string
		values   []string
		wantErr  bool
	}{
		{in: `m{a="x",b!~"y|z"}`, skeleton: `m{a="",b!~""}`, values: []string{"x", "y|z"}},
		{in: `m{a="x\"} or vector(1)"}`, skeleton: `m{a=""}`, values: []string{`x"} or vector(1)`}},
		{in: `m{a='x',b=` + "`y\\`" + `}`, skeleton: `m{a="",b=""}`, values: []string{"x", `y\`}},
		{in: `m{a="\x00\u00e9\n"}`, skeleton: `m{a=""}`, values: []string{"\x00é\n"}},
		{in: `m{a='x\'y\x27',b="it's"}`, skeleton: `m{a="",b=""}`, values: []string{"x'y'", "it's"}},
		{in: `m{a='x\"'}`, wantErr: true},
		{in: `m{a="x\'"}`, wantErr: true},
		{in: `m{a="x}`, wantErr: true},
		{in: "m{a=\"x\ny\"}", wantErr: true},
		{in: `m{a="\q"}`, wantErr: true},
		{in: `m{a="\x4"}`, wantErr: true},
		{in: "m{a=\"\xff\"}", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			sk, vals, err := splitPromQL(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("splitPromQL error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if sk != tt.skeleton || fmt.Sprint(vals) != fmt.Sprint(tt.values) {
				t.Errorf("splitPromQL = %q, %q; want %q, %q", sk, vals, tt.skeleton, tt.values)
			}
		})
	}
}
