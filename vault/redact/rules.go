package redact

import (
	"regexp"
	"strings"
	"sync"
)

// The kinds of the default rules.
const (
	KindAWSAccessKey     = "aws-access-key"
	KindAPIKey           = "api-key"
	KindGitHubToken      = "github-token"
	KindSlackToken       = "slack-token"
	KindPrivateKey       = "private-key"
	KindBearerToken      = "bearer-token"
	KindSecretAssignment = "secret-assignment"
	KindJWT              = "jwt"
	KindURLCredentials   = "url-credentials"
	KindAWSSecretKey     = "aws-secret-key"
	KindCLIPassword      = "cli-password"
	KindCookie           = "cookie"
	KindBasicAuth        = "basic-auth"
	KindCloudKey         = "cloud-key"
	KindServiceToken     = "service-token"
	KindWebhookURL       = "webhook-url"
	KindHashiCorpToken   = "hashicorp-token"
	KindTelegramToken    = "telegram-bot-token"
	KindRegistryAuth     = "registry-auth"
	KindHighEntropy      = "high-entropy-token"
)

// The default patterns. Token shapes are anchored on word boundaries and a
// minimum length so a word like "sk-ip" or "risk-free" never matches.
var defaultRules = []rule{
	{Kind: KindPrivateKey, pattern: lazyRegexp(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)`), needles: []string{"-----BEGIN "}},
	{Kind: KindAWSAccessKey, pattern: lazyRegexp(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), needles: []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
	// A JSON Web Token: three base64url parts, the first two JSON objects
	// ("eyJ" is `{"` encoded), bare or in a cookie or header.
	{Kind: KindJWT, pattern: lazyRegexp(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), needles: []string{"eyJ"}},
	// The password of a URL: scheme://user:PASSWORD@host, user optional
	// (redis://:PASSWORD@host).
	{Kind: KindURLCredentials, pattern: lazyRegexp(`(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@]*:(?P<secret>[^\s/@]+)@`), accept: notPlaceholder, needles: []string{"://"}},
	// An AWS secret access key: 40 base64 characters on a line that names
	// AWS; the shape alone is too common (hashes, paths) to go by.
	{Kind: KindAWSSecretKey, pattern: lazyRegexp(`(?i)\baws\b[^\n]{0,80}?(?:^|[^A-Za-z0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])`), accept: mixedKey, folded: []string{"aws"}},
	// A password on a database client's command line: mysql -pPASSWORD,
	// mysqldump -pPASSWORD (psql takes none; PGPASSWORD=… is an assignment).
	{Kind: KindCLIPassword, pattern: lazyRegexp(`\bmysql(?:dump|admin|import|sh)?\b[^\n]*?\s-p(?P<secret>[^\s'"-][^\s'"]{2,})`), accept: notPlaceholder, needles: []string{"mysql"}},
	{Kind: KindGitHubToken, pattern: lazyRegexp(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`), needles: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	// Slack: bot, user, app-level and refresh tokens, and the app token of
	// Socket Mode (xapp-).
	{Kind: KindSlackToken, pattern: lazyRegexp(`\bxox[abpres]-[A-Za-z0-9-]{10,}|\bxoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{100,}|\bxapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+`), needles: []string{"xox", "xapp-"}},
	{Kind: KindAPIKey, pattern: lazyRegexp(`\bsk-[A-Za-z0-9_-]{20,}`), accept: hasDigit, needles: []string{"sk-"}},
	{Kind: KindBearerToken, pattern: lazyRegexp(`(?i)(?:\bauthorization["']?\s*[:=]\s*["']?bearer\s+|\bbearer\s+)(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)`), accept: tokenLike, folded: []string{"bearer"}},
	// The values of a Cookie or Set-Cookie header (or curl's --cookie),
	// those that look like a credential: "Path=/" and "Max-Age=3600" stay.
	{Kind: KindCookie, pattern: lazyRegexp(`(?i)(?:\b(?:set-)?cookie["']?\s*:|--cookie[\s=]|\bcurl\b[^\n]*?\s-b)\s*["']?(?P<secret>[^\s"'=;]+=[^\s;"']*(?:;\s*[^\s"'=;]+(?:=[^\s;"']*)?)*)`), rewrite: cookieValues, folded: []string{"cookie", "curl"}},
	// HTTP basic authentication: the header's base64 credentials, and the
	// password of curl -u user:PASSWORD.
	{Kind: KindBasicAuth, pattern: lazyRegexp(`(?i)(?:\bauthorization["']?\s*[:=]\s*["']?basic\s+|\bcurl\b[^\n]*?\s(?:-u|--user)[\s=]+["']?[^\s:'"]+:)(?P<secret>[^\s"']{4,})`), accept: notPlaceholder, folded: []string{"basic", "curl"}},
	// Cloud providers' keys of a known shape: a Google API key, a Google
	// OAuth access token, a DigitalOcean token, and the account or shared
	// access key of an Azure connection string.
	{Kind: KindCloudKey, pattern: lazyRegexp(`\bAIza[0-9A-Za-z_-]{35}\b|\bya29\.[0-9A-Za-z_-]{20,}|\bdo[por]_v1_[a-f0-9]{64}\b|\b(?i:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<secret>[A-Za-z0-9+/%=&:.-]{20,})`), needles: []string{"AIza", "ya29.", "_v1_"}, folded: []string{"accountkey", "sharedaccess"}},
	// More cloud keys: the signature of an Azure SAS address (?…&sig=),
	// the key id of a Google service account's JSON file, an Alibaba
	// access key id, a Microsoft Entra (Azure AD) client secret, a
	// Yandex Cloud API key, a Databricks token, a Cloudflare origin CA
	// key. The key id is not the key, but it names the one key a leak
	// revokes and is kept out like the key.
	{Kind: KindCloudKey, pattern: lazyRegexp(cloudKeys), needles: []string{"sig=", "private_key_id", "LTAI", "Q~", "AQVN", "dapi", "v1.0-"}},
	// Services' tokens, each with its own prefix: Stripe, GitLab, npm,
	// PyPI, SendGrid, Twilio, Hugging Face, Docker Hub, Shopify.
	{Kind: KindServiceToken, pattern: lazyRegexp(`\b(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}|glpat-[0-9A-Za-z_-]{20,}|gl(?:ptt|rt|dt|cbt)-[0-9A-Za-z_-]{20,}|npm_[A-Za-z0-9]{36}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|SK[0-9a-f]{32}|hf_[A-Za-z0-9]{34,}|dckr_pat_[A-Za-z0-9_-]{20,}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b`), needles: []string{"_live_", "_test_", "glpat-", "glptt-", "glrt-", "gldt-", "glcbt-", "npm_", "pypi-", "SG.", "SK", "hf_", "dckr_pat_", "shp"}},
	// Services' tokens of the reference scanner's other families, by
	// prefix (serviceTokens lists them).
	{Kind: KindServiceToken, pattern: lazyRegexp(serviceTokens), needles: serviceNeedles},
	// The secret part of a Slack or Discord webhook address: whoever has it
	// can post.
	{Kind: KindWebhookURL, pattern: lazyRegexp(`\bhttps://(?:hooks\.slack\.com/(?:services|workflows)/|(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/)(?P<secret>[A-Za-z0-9/_-]{20,})`), needles: []string{"hooks.slack.com/", "discord"}},
	// HashiCorp: a Vault service, batch or recovery token (hvs., hvb.,
	// hvr.; the legacy s. tokens are too short a shape to go by) and a
	// Terraform Cloud API token (….atlasv1.…).
	{Kind: KindHashiCorpToken, pattern: lazyRegexp(`\bhv[sbr]\.[A-Za-z0-9_-]{24,}|\b[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}`), needles: []string{"hvs.", "hvb.", "hvr.", ".atlasv1."}},
	// A Telegram bot token: the bot's numeric id, a colon, and 35
	// characters starting "AA"; in the API's addresses it follows "/bot".
	{Kind: KindTelegramToken, pattern: lazyRegexp(`(?:^|[^0-9])(?P<secret>[0-9]{8,10}:AA[A-Za-z0-9_-]{32,34})`), needles: []string{":AA"}},
	// A registry login in Docker's config.json (or Podman's auth.json):
	// "auth" holds base64 of user:password, "identitytoken" a refresh
	// token. Quotes may be escaped, as in a JSON string inside JSON.
	{Kind: KindRegistryAuth, pattern: lazyRegexp(`\\?"(?:auth|identitytoken)\\?"\s*:\s*\\?"(?P<secret>[A-Za-z0-9+/=_.-]{12,})`), accept: registryAuth, needles: []string{`"auth`, `"identitytoken`}},
	// More command lines that take a password as an argument: sshpass -p,
	// redis-cli -a (or --pass), docker login -p (or --password).
	{Kind: KindCLIPassword, pattern: lazyRegexp(`(?:\bsshpass\b[^\n]*?\s-p\s*|\bredis-cli\b[^\n]*?\s(?:-a\s+|--pass[\s=]+)|\bdocker\s+login\b[^\n]*?\s(?:-p\s*|--password[\s=]+))["']?(?P<secret>[^\s'"-][^\s'"]{2,})`), accept: notPlaceholder, needles: []string{"sshpass", "redis-cli", "docker"}},
	{Kind: KindSecretAssignment, pattern: lazyRegexp(`(?i)\b[a-z0-9_.-]*(?:password|passwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key|token)["']?\s*(?:=|:)\s*["']?(?P<secret>[^\s"'<>,;)\]}]{4,})`), accept: secretLike, folded: []string{"passw", "passphrase", "secret", "api", "access", "private", "token"}},
	// A high-entropy token right after a word that names a credential
	// (key, secret, token, password), with or without an operator:
	// "secret key Zq3vJ8kP…". Found by a scan, not a pattern (entropy.go).
	{Kind: KindHighEntropy, scan: afterSecretWord},
}

// lazyRegexp compiles src the first time it is needed.
func lazyRegexp(src string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
}

// cloudKeys is the pattern of the second cloud-key rule; each alternative
// is one provider's shape.
var cloudKeys = strings.Join([]string{
	`[?&]sig=(?P<secret>[A-Za-z0-9%+/=]{16,})`,                                                               // Azure SAS signature
	`\bprivate_key_id\\?["']?\s*[:=]\s*\\?["']?(?P<secret>[0-9a-f]{40})\b`,                                   // GCP service account
	`\bLTAI[A-Za-z0-9]{20}\b`,                                                                                // Alibaba Cloud
	`(?:^|[^A-Za-z0-9_~.-])(?P<secret>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:$|[^A-Za-z0-9_~.-])`, // Microsoft Entra client secret
	`\bAQVN[A-Za-z0-9_-]{35,38}`,                                                                             // Yandex Cloud
	`\bdapi[0-9a-f]{32}(?:-[0-9])?`,                                                                          // Databricks
	`\bv1\.0-[0-9a-f]{24}-[0-9a-f]{146}`,                                                                     // Cloudflare origin CA
}, "|")

// serviceTokens is the pattern of the second service-token rule: one
// alternative a service, each with a prefix of its own (in
// serviceNeedles) and the length and alphabet the service documents.
var serviceTokens = `\b(?:` + strings.Join([]string{
	`whsec_[A-Za-z0-9+/=]{24,}`,                           // Stripe webhook signing secret
	`(?:pub)?key-[0-9a-f]{32}`,                            // Mailgun
	`lin_(?:api|oauth)_[A-Za-z0-9]{32,64}`,                // Linear
	`AGE-SECRET-KEY-1[0-9A-Z]{58}`,                        // age
	`ATATT3[A-Za-z0-9_=-]{100,}`,                          // Atlassian
	`dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}`,  // Doppler
	`dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}`,                  // Dynatrace
	`EZ[AT]K[A-Za-z0-9]{54}`,                              // EasyPost
	`FLWSECK(?:_TEST)?-[0-9a-f]{32}-X`,                    // Flutterwave
	`fio-u-[A-Za-z0-9_=-]{64}`,                            // Frame.io
	`glc_[A-Za-z0-9+/]{32,400}={0,2}`,                     // Grafana Cloud
	`glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`,                 // Grafana service account
	`gl(?:ft|imt|agent|oas|soat|ffct)-[0-9A-Za-z_-]{20,}`, // GitLab, other tokens
	`GR1348941[0-9A-Za-z_-]{20}`,                          // GitLab runner registration
	`HRKU-[A-Za-z0-9_-]{20,}`,                             // Heroku
	`ico-[A-Za-z0-9]{32}`,                                 // Infracost
	`AKCp[0-9][A-Za-z0-9]{60,}`,                           // JFrog
	`NR(?:AK|II)-[A-Za-z0-9_-]{27,32}`,                    // New Relic user and insert keys
	`NRJS-[a-f0-9]{19}`,                                   // New Relic browser key
	`oy2[a-z0-9]{43}`,                                     // NuGet
	`API-[A-Z0-9]{26}`,                                    // Octopus Deploy
	`ops_eyJ[A-Za-z0-9+/=]{50,}`,                          // 1Password service account
	`pplx-[A-Za-z0-9]{48}`,                                // Perplexity
	`pscale_(?:tkn|pw|oauth)_[A-Za-z0-9=._-]{32,64}`,      // PlanetScale
	`PMAK-[a-f0-9]{24}-[a-f0-9]{34}`,                      // Postman
	`pnu_[A-Za-z0-9]{36}`,                                 // Prefect
	`pul-[a-f0-9]{40}`,                                    // Pulumi
	`rdme_[a-z0-9]{70}`,                                   // ReadMe
	`rubygems_[a-f0-9]{48}`,                               // RubyGems
	`tk-us-[A-Za-z0-9_-]{48}`,                             // Scalingo
	`sntrys_eyJ[A-Za-z0-9+/=_-]{50,}`,                     // Sentry organisation token
	`sntryu_[a-f0-9]{64}`,                                 // Sentry user token
	`xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}`,                // Brevo (Sendinblue)
	`shippo_(?:live|test)_[a-f0-9]{40}`,                   // Shippo
	`sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}`,                  // Sourcegraph
	`sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}`,                 // Square
	`EAA[ACM][A-Za-z0-9_-]{60,}`,                          // Square access token, Meta (Facebook) token
	`tfp_[A-Za-z0-9_.=-]{59}`,                             // Typeform
	`xai-[A-Za-z0-9]{80}`,                                 // xAI
	`CLOJARS_[a-z0-9]{60}`,                                // Clojars
	`fo1_[A-Za-z0-9_-]{43}`,                               // Fly.io
	`ntn_[0-9]{11}[A-Za-z0-9]{35}`,                        // Notion
	`api_org_[A-Za-z0-9]{34}`,                             // Hugging Face organisation
	`dnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52}`,               // Defined Networking
	`duffel_(?:test|live)_[A-Za-z0-9_=-]{43}`,             // Duffel
	`sbp_[a-f0-9]{40}`,                                    // Supabase
	`s-s4t2(?:ud|af)-[a-f0-9]{64}`,                        // 42 Intra
	`sha256~[A-Za-z0-9_-]{43}`,                            // OpenShift
	`sk\.eyJ[A-Za-z0-9._-]{50,}`,                          // Mapbox secret token
	`sm_(?:pat|aat|sat)_[A-Za-z0-9]{16}`,                  // SettleMint
}, "|") + `)`

// serviceNeedles are the literal parts of serviceTokens' alternatives:
// every match holds one (TestNeedlesNecessary).
var serviceNeedles = []string{"whsec_", "key-", "lin_", "AGE-SECRET-KEY-1", "ATATT3", "dp.", "dt0c01.", "EZAK", "EZTK",
	"FLWSECK", "fio-u-", "glc_", "glsa_", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-", "GR1348941",
	"HRKU-", "ico-", "AKCp", "NRAK-", "NRII-", "NRJS-", "oy2", "API-", "ops_eyJ", "pplx-", "pscale_", "PMAK-", "pnu_",
	"pul-", "rdme_", "rubygems_", "tk-us-", "sntry", "xkeysib-", "shippo_", "sgp_", "sq0", "EAA", "tfp_", "xai-",
	"CLOJARS_", "fo1_", "ntn_", "api_org_", "dnkey-", "duffel_", "sbp_", "s-s4t2", "sha256~", "sk.eyJ", "sm_"}
