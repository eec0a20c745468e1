package dashboard

import (
	"testing"
)

// localPath keeps a login on the dashboard's pages, whatever next says,
// and keeps a page's query; at the root too, never a "//host" URL.
func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ prefix, next, want string }{
		{"/dashboard", "/dashboard/companies/acme", "/dashboard/companies/acme"},
		{"/dashboard", "/dashboard/companies/acme/certificates/c1?company=other&profile=strict", "/dashboard/companies/acme/certificates/c1?company=other&profile=strict"},
		{"/dashboard", "/dashboard/", "/dashboard/"},
		{"/dashboard", "/dashboard/../operator/companies", "/dashboard/"},
		{"/dashboard", "/dashboard/%2e%2e/operator/companies", "/dashboard/"},
		{"/dashboard", "/dashboard/./companies/../companies/acme/", "/dashboard/companies/acme/"},
		{"/dashboard", "/dashboardx/", "/dashboard/"},
		{"/dashboard", "//evil.example/dashboard/", "/dashboard/"},
		{"/dashboard", "https://evil.example/dashboard/", "/dashboard/"},
		{"/dashboard", "/dashboard/\\evil", "/dashboard/"},
		{"/dashboard", "/dashboard/\t/x", "/dashboard/"},
		{"/dashboard", "", "/dashboard/"},
		{"", "/companies/acme?x=1", "/companies/acme?x=1"},
		{"", "//evil.example/", "/"},
		{"", "/..//evil.example/", "/evil.example/"},
		{"", "/%2F/evil.example", "/evil.example"},
	} {
		if got := localPath(tc.prefix, tc.next); got != tc.want {
			t.Errorf("localPath(%q, %q) = %q, want %q", tc.prefix, tc.next, got, tc.want)
		}
	}
}
