package rulefile

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matchAll is the regular expression an empty name.matches stands for.
var matchAll = regexp.MustCompile(".*")

// nameRegexp compiles name.matches; empty means ".*".
func nameRegexp(n NameMapping) (*regexp.Regexp, error) {
	if n.Matches == "" {
		return matchAll, nil
	}
	return regexp.Compile(n.Matches)
}

// checkRegexp adds a problem if a non-empty pattern is not RE2.
func checkRegexp(p *problems, field, pattern string) {
	if pattern == "" {
		return
	}
	if _, err := regexp.Compile(pattern); err != nil {
		p.add(field, "invalid regular expression: %v", err)
	}
}

// checkFilter checks one seriesFilters entry: exactly one of is and isNot, RE2.
func checkFilter(p *problems, field string, f RegexFilter) {
	switch {
	case f.Is != "" && f.IsNot != "":
		p.add(field, "set exactly one of is and isNot, not both")
	case f.Is == "" && f.IsNot == "":
		p.add(field, "set exactly one of is and isNot")
	}
	checkRegexp(p, field+".is", f.Is)
	checkRegexp(p, field+".isNot", f.IsNot)
}

// checkName checks name.matches and name.as together, as prometheus-adapter does:
// name.matches is RE2, and an empty as needs at most one capture group.
func checkName(p *problems, n NameMapping) {
	re, err := nameRegexp(n)
	if err != nil {
		p.add("name.matches", "invalid regular expression: %v", err)
		return
	}
	if groups := re.NumSubexp(); n.As == "" && groups > 1 {
		p.add("name.as", "must be set: name.matches has %d capture groups, and an empty as "+
			"only means $0 (no group) or $1 (one group)", groups)
	}
}

// nameWarnings reports references of name.as to capture groups name.matches does not
// have: each expands to nothing, as in prometheus-adapter, so the metric name loses
// that part (and a rule whose every name is empty yields no metric).
func nameWarnings(p *problems, n NameMapping) {
	re, err := nameRegexp(n)
	if err != nil || n.As == "" {
		return
	}
	groups := re.NumSubexp()
	for _, ref := range expansionRefs(n.As) {
		switch {
		case ref.num > groups:
			p.add("name.as", "refers to capture group $%d, but name.matches has %s; it expands to nothing",
				ref.num, countGroups(groups))
		case ref.num < 0 && !slices.Contains(re.SubexpNames()[1:], ref.name):
			p.add("name.as", "refers to capture group %q, which name.matches does not define, so it expands to nothing%s",
				ref.name, numberThenTextHint(ref.name))
		}
	}
}

func countGroups(n int) string {
	switch n {
	case 0:
		return "no capture group"
	case 1:
		return "only 1 capture group"
	}
	return "only " + strconv.Itoa(n) + " capture groups"
}

// numberThenTextHint explains the classic "$1_total" mistake: regexp.Expand reads the
// longest name, so $1_total refers to a group named "1_total", not to group 1.
func numberThenTextHint(name string) string {
	i := strings.IndexFunc(name, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return ""
	}
	return "; to follow group " + name[:i] + " with text, write ${" + name[:i] + "}" + name[i:]
}

// expansionRef is one $name, ${name}, $1 or ${1} in a regexp.Expand template; num is -1
// for a name.
type expansionRef struct {
	name string
	num  int
}

// expansionRefs lists the references of an expansion template with the grammar of
// regexp.Expand: "$$" is a literal "$", a "$" not followed by a valid reference is
// literal, and a name is the longest run of letters, digits and underscores.
func expansionRefs(template string) []expansionRef {
	var refs []expansionRef
	for rest := template; ; {
		i := strings.IndexByte(rest, '$')
		if i < 0 {
			return refs
		}
		rest = rest[i+1:]
		if strings.HasPrefix(rest, "$") {
			rest = rest[1:]
			continue
		}
		name, after, ok := parseRefName(rest)
		if !ok {
			continue
		}
		refs = append(refs, expansionRef{name: name, num: refNumber(name)})
		rest = after
	}
}

// parseRefName reads "name" or "{name}" at the start of s.
func parseRefName(s string) (name, rest string, ok bool) {
	brace := strings.HasPrefix(s, "{")
	if brace {
		s = s[1:]
	}
	end := 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			break
		}
		end += size
	}
	if end == 0 {
		return "", "", false
	}
	name, rest = s[:end], s[end:]
	if brace {
		if !strings.HasPrefix(rest, "}") {
			return "", "", false
		}
		rest = rest[1:]
	}
	return name, rest, true
}

// refNumber is the group number a name denotes, or -1: ASCII digits, no leading zero,
// below 1e8, as in regexp.Expand.
func refNumber(name string) int {
	if len(name) > 1 && name[0] == '0' {
		return -1
	}
	num := 0
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' || num >= 1e8 {
			return -1
		}
		num = num*10 + int(name[i]-'0')
	}
	return num
}
