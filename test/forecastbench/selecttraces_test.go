package forecastbench

import (
	"strings"
	"testing"
)

func TestSelectTraces(t *testing.T) {
	all := HeldOutTraces(heldOutDir)
	for _, tc := range []struct {
		names string
		want  []string // nil: an error
		err   string
	}{
		{"", []string{"twitter-stream"}, ""}, // all: the first checked
		{"worldcup98,calgary-http", []string{"worldcup98", "calgary-http"}, ""},
		{" worldcup98 , ", []string{"worldcup98"}, ""},
		{"worldcup", nil, `"worldcup" is no trace's name`},
		{"worldcup98,wikipedia", nil, `"wikipedia" is no trace's name`},
		{",", nil, "selects no trace"},
	} {
		got, err := SelectTraces(all, tc.names)
		switch {
		case tc.want == nil && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %d traces, error %v; want an error with %q", tc.names, len(got), err, tc.err)
		case tc.want != nil && err != nil:
			t.Errorf("%q: %v", tc.names, err)
		case tc.want != nil && tc.names == "" && len(got) != len(all):
			t.Errorf("%q: %d traces, want all %d", tc.names, len(got), len(all))
		case tc.want != nil && tc.names != "" && len(got) != len(tc.want):
			t.Errorf("%q: %d traces, want %v", tc.names, len(got), tc.want)
		case tc.want != nil:
			for i, w := range tc.want {
				if got[i].Name != w {
					t.Errorf("%q: trace %d is %s, want %s", tc.names, i, got[i].Name, w)
				}
			}
		}
	}
	if _, err := SelectTraces(nil, ""); err == nil {
		t.Error("no traces at all: no error")
	}
}
