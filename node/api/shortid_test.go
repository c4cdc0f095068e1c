package api_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idlegrid/idlegrid/node/api"
)

func TestResolveID(t *testing.T) {
	ids := []string{
		"bafkreiaaaa1111ujpunlre",
		"bafkreiaaaa2222xyzzyabc",
		"bafkreibbbb3333xyzzyabc",
	}
	for _, tc := range []struct {
		name, typed, want string
		status            int
		msg               string
	}{
		{name: "full", typed: ids[1], want: ids[1]},
		{name: "prefix", typed: "bafkreibbbb", want: ids[2]},
		{name: "suffix as events print it", typed: "ujpunlre", want: ids[0]},
		{name: "cli short form", typed: "bafkre…ujpunlre", want: ids[0]},
		{name: "ascii short form", typed: "bafkre...ujpunlre", want: ids[0]},
		{name: "ambiguous prefix", typed: "bafkreiaaaa", status: http.StatusConflict, msg: `job ID "bafkreiaaaa" matches 2 jobs`},
		{name: "ambiguous suffix", typed: "xyzzyabc", status: http.StatusConflict, msg: "give more characters"},
		{name: "unknown", typed: "nosuchjob", status: http.StatusNotFound, msg: `no job "nosuchjob" on this node (idlegrid job ls lists them)`},
		{name: "placeholder too short", typed: "JOB", status: http.StatusNotFound, msg: "give at least 4 characters"},
		{name: "empty", typed: " ", status: http.StatusBadRequest, msg: "no job ID given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := api.ResolveID("job", "idlegrid job ls", tc.typed, ids)
			if tc.status == 0 {
				if err != nil || got != tc.want {
					t.Fatalf("ResolveID(%q) = %q, %v; want %q", tc.typed, got, err, tc.want)
				}
				return
			}
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != tc.status || !strings.Contains(ae.Message, tc.msg) {
				t.Fatalf("ResolveID(%q) = %q, %v; want status %d with %q", tc.typed, got, err, tc.status, tc.msg)
			}
		})
	}
}
