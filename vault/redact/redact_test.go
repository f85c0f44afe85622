package redact

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestRedactCases(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwMbRvI0MBZhpF\n-----END RSA PRIVATE KEY-----"
	cases := []struct {
		name, in, want string
		counts         map[string]int
	}{
		{"aws", "key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED:aws-access-key] here", map[string]int{KindAWSAccessKey: 1}},
		{"openai", "OPENAI: sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t", "OPENAI: [REDACTED:api-key]", map[string]int{KindAPIKey: 1}},
		{"anthropic", "use sk-ant-api03-AbCdEf0123456789_xyz-QQ now", "use [REDACTED:api-key] now", map[string]int{KindAPIKey: 1}},
		{"ghp", "token ghp_0123456789abcdefghijABCDEFGHIJ012345.", "token [REDACTED:github-token].", map[string]int{KindGitHubToken: 1}},
		{"github_pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github-token]", map[string]int{KindGitHubToken: 1}},
		{"slack", "xoxb-123456789012-abcdefghijkl and xoxp-1-2-3-abcdef", "[REDACTED:slack-token] and [REDACTED:slack-token]", map[string]int{KindSlackToken: 2}},
		{"pem", "key:\n" + pem + "\nafter", "key:\n[REDACTED:private-key]\nafter", map[string]int{KindPrivateKey: 1}},
		{"pem torn", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "[REDACTED:private-key]", map[string]int{KindPrivateKey: 1}},
		{"password=", "DB_PASSWORD=hunter2 ./run", "DB_PASSWORD=[REDACTED:secret-assignment] ./run", map[string]int{KindSecretAssignment: 1}},
		{"secret: yaml", "client_secret: 9f8e7d6c5b4a", "client_secret: [REDACTED:secret-assignment]", map[string]int{KindSecretAssignment: 1}},
		{"json key", `{"api_key": "AbCdEf123456"}`, `{"api_key": "[REDACTED:secret-assignment]"}`, map[string]int{KindSecretAssignment: 1}},
		{"bearer header", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "Authorization: Bearer [REDACTED:bearer-token]", map[string]int{KindBearerToken: 1}},
		{"curl header", `curl -H "authorization: bearer 0123456789abcdef"`, `curl -H "authorization: bearer [REDACTED:bearer-token]"`, map[string]int{KindBearerToken: 1}},
		{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok", "token [REDACTED:jwt] ok", map[string]int{KindJWT: 1}},
		{"jwt cookie", "cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UifQ.c2lnbmF0dXJlLWhlcmU; path=/", "cookie: session=[REDACTED:jwt]; path=/", map[string]int{KindJWT: 1}},
		{"url password", "psql https://deploy:Hunt3rPassw0rd77@db.internal/prod", "psql https://deploy:[REDACTED:url-credentials]@db.internal/prod", map[string]int{KindURLCredentials: 1}},
		{"url no user", "REDIS=redis://:s3cretPW@cache:6379/0", "REDIS=redis://:[REDACTED:url-credentials]@cache:6379/0", map[string]int{KindURLCredentials: 1}},
		{"aws secret prose", "aws creds: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "aws creds: [REDACTED:aws-access-key] / [REDACTED:aws-secret-key] ok", map[string]int{KindAWSAccessKey: 1, KindAWSSecretKey: 1}},
		{"aws secret key:", "AWS secret key: Zq3vK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQwXy7u", "AWS secret key: [REDACTED:aws-secret-key]", map[string]int{KindAWSSecretKey: 1}},
		{"mysql -p", "mysql -u root -pS3cretPass db < dump.sql", "mysql -u root -p[REDACTED:cli-password] db < dump.sql", map[string]int{KindCLIPassword: 1}},
		{"several", "AKIAIOSFODNN7EXAMPLE AKIAI44QH8DHBEXAMPLE password=s3cr3t!", "[REDACTED:aws-access-key] [REDACTED:aws-access-key] password=[REDACTED:secret-assignment]", map[string]int{KindAWSAccessKey: 2, KindSecretAssignment: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, counts := Text(tc.in, DefaultRules())
			if got != tc.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if !maps.Equal(counts, tc.counts) {
				t.Errorf("counts = %v, want %v", counts, tc.counts)
			}
			// Redacting again changes nothing.
			if again, c := Text(got, DefaultRules()); again != got || len(c) != 0 {
				t.Errorf("second pass changed %q to %q (%v)", got, again, c)
			}
		})
	}
}

// TestRedactProse lists ordinary text that must come through untouched.
func TestRedactProse(t *testing.T) {
	prose := []string{
		"The password is stored in the vault, never in the repo.",
		"Password: required",
		"Secret: Friday is the deadline.",
		"token: the next word",
		"Set max_token: 4096 and temperature: 0.2",
		"the bearer of bad news",
		"This is a risk-free, task-oriented sk-ip over the details.",
		"password=$DB_PASSWORD and secret: {{ .Values.secret }}",
		"api_key: <your key here>",
		"input_tokens: 100, output_tokens: 20",
		"We ask for a passphrase; the secret sauce is patience.",
		"ghp_short is not a token, nor is AKIA1234.",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
		"Commit 0123456789abcdef0123456789abcdef01234567 fixed it.",
		"password: ******** (masked)",
		"Exit code: 0; Wall time: 0.0000 seconds",
		"https://example.com/path?q=1&sort=asc",
		"clone git@github.com:org/repo.git or https://user@example.com/x",
		"see http://localhost:8080/a and mailto:me@example.com",
		"postgres://app:$DB_PASSWORD@db/app and https://:****@host/",
		"the aws region is eu-west-1; commit 0123456789abcdef0123456789abcdef01234567",
		"mysql -u root -p db (it asks for the password)",
		"eyJ is how a JSON object starts in base64",
	}
	for _, s := range prose {
		if got, counts := Text(s, DefaultRules()); got != s {
			t.Errorf("prose changed:\n  in %q\n out %q (%v)", s, got, counts)
		}
	}
}

func TestConfig(t *testing.T) {
	rs, err := NewRules(Config{
		Disable: []string{KindAWSAccessKey},
		Extra:   map[string]string{"ticket": `\bTICKET-[0-9]{4}\b`, "internal-host": `(?P<secret>[a-z]+)\.corp\.example`},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, counts := Text("AKIAIOSFODNN7EXAMPLE TICKET-1234 db.corp.example", rs)
	want := "AKIAIOSFODNN7EXAMPLE [REDACTED:ticket] [REDACTED:internal-host].corp.example"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !maps.Equal(counts, map[string]int{"ticket": 1, "internal-host": 1}) {
		t.Errorf("counts = %v", counts)
	}
	for _, bad := range []Config{
		{Disable: []string{"no-such-kind"}},
		{Extra: map[string]string{"x": "("}},
		{Extra: map[string]string{"x": "a*"}},
		{Extra: map[string]string{"bad]kind": "a"}},
	} {
		if _, err := NewRules(bad); err == nil {
			t.Errorf("NewRules(%+v) accepted", bad)
		}
	}
	if got, c := Text("password=hunter2", nil); got != "password=hunter2" || len(c) != 0 {
		t.Errorf("nil rules redacted: %q", got)
	}
	if got, _ := Text("password=hunter2", &Rules{}); got != "password=hunter2" {
		t.Errorf("empty rules redacted: %q", got)
	}
	if len(DefaultRules().Kinds()) != len(DefaultKinds()) {
		t.Error("DefaultRules and DefaultKinds disagree")
	}
}

func TestRedactJSONKeepsStructure(t *testing.T) {
	in := json.RawMessage(`{"cmd":"export AWS_KEY=AKIAIOSFODNN7EXAMPLE","n":3,"list":["ok","ghp_0123456789abcdefghijABCDEFGHIJ012345"]}`)
	out, counts := JSON(in, DefaultRules())
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", out, err)
	}
	if strings.Contains(string(out), "AKIA") || strings.Contains(string(out), "ghp_") || v["n"].(float64) != 3 {
		t.Errorf("out = %s", out)
	}
	if counts[KindAWSAccessKey] != 1 || counts[KindGitHubToken] != 1 {
		t.Errorf("counts = %v", counts)
	}
	clean := json.RawMessage(`{"cmd":"ls"}`)
	if out, _ := JSON(clean, DefaultRules()); string(out) != string(clean) {
		t.Errorf("clean input rewritten: %s", out)
	}
}

// Keys are redacted like values: a tool's input may key a map by a
// credential. Two keys that redact alike keep both values.
func TestRedactJSONKeys(t *testing.T) {
	in := json.RawMessage(`{"env":{"AKIAIOSFODNN7EXAMPLE":"x","AKIAI44QH8DHBEXAMPLE":"y","PATH":"/bin"}}`)
	out, counts := JSON(in, DefaultRules())
	if strings.Contains(string(out), "IOSFODNN7EXAMPLE") || strings.Contains(string(out), "I44QH8DHBEXAMPLE") || counts[KindAWSAccessKey] != 2 {
		t.Fatalf("keys kept their secret: %s %v", out, counts)
	}
	var got struct{ Env map[string]string }
	if err := json.Unmarshal(out, &got); err != nil || len(got.Env) != 3 || got.Env["PATH"] != "/bin" {
		t.Fatalf("structure lost: %s %v", out, err)
	}
}
