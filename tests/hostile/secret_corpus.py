"""tests/hostile/secrets.jsonl: realistic secret shapes, many per class, all synthetic.

    uv run python -m tests.hostile.secret_corpus      # regenerate the file

Each line is {"id", "class", "text", "secret"}: `text` is what a user or an assistant would
write (a line of an env file, a command, a config block, a sentence), `secret` the part that
must not be stored (for a token with a public prefix, the random part after it). Values are
drawn from a fixed seed, so the file is reproducible; regenerate it after adding a shape.
Classes follow the attack report: token formats, values holding characters that end a value
elsewhere, values that look like something else, credentials given as command arguments,
config files, key blocks, and key-like values after password/secret/token/key words; then
shapes of captured conversation: cloud CSV exports, YAML pass-phrases, messaging/telephony
keys, `.pgpass` lines, base64 after a secret word, "password" before its value in prose, and a
secret key beside its access key id.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

OUT = Path(__file__).with_name("secrets.jsonl")
R = random.Random(20261201)

LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIGITS
HEXL = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def pick(alphabet: str, n: int) -> str:
    """Random characters, with at least one digit and one letter when the alphabet has them."""
    while True:
        value = "".join(R.choice(alphabet) for _ in range(n))
        has_digit = any(c.isdigit() for c in value) or not any(c.isdigit() for c in alphabet)
        has_alpha = any(c.isalpha() for c in value) or not any(c.isalpha() for c in alphabet)
        if has_digit and has_alpha:
            return value


def password(specials: str = "!@#$%^&*-_=+?", n: int | None = None) -> str:
    """A person's password: letters, digits and some of `specials`, not starting with one."""
    n = n or R.randint(10, 18)
    body = [R.choice(LOWER + UPPER)] + [R.choice(ALNUM + specials * 2) for _ in range(n - 1)]
    body[R.randrange(1, n)] = R.choice(DIGITS)
    if specials:
        body[R.randrange(1, n)] = R.choice(specials)
    return "".join(body)


# (class, text, secret)
Case = tuple[str, str, str]


# ------------------------------------------------------------------ token formats

def _tokens() -> list[tuple[str, Callable[[], tuple[str, str]]]]:
    """(family, make) where make() -> (token, secret part)."""

    def pre(prefix: str, alphabet: str, n: int, suffix: str = "") -> Callable[[], tuple[str, str]]:
        def make() -> tuple[str, str]:
            body = pick(alphabet, n)
            return f"{prefix}{body}{suffix}", body

        return make

    def jwt() -> tuple[str, str]:
        head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        claims = json.dumps({"sub": pick(DIGITS, 8), "name": pick(LOWER, 6),
                             "iat": R.randint(1_600_000_000, 1_800_000_000)})
        body = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
        sig = pick(B64URL, 43)
        return f"{head}.{body}.{sig}", sig

    def slack_bot() -> tuple[str, str]:
        body = f"{pick(DIGITS, 12)}-{pick(DIGITS, 13)}-{pick(ALNUM, 24)}"
        return f"xoxb-{body}", body

    def slack_user() -> tuple[str, str]:
        body = f"{pick(DIGITS, 12)}-{pick(DIGITS, 12)}-{pick(DIGITS, 13)}-{pick(HEXL, 32)}"
        return f"xoxp-{body}", body

    def sendgrid() -> tuple[str, str]:
        a, b = pick(B64URL, 22), pick(B64URL, 43)
        return f"SG.{a}.{b}", b

    def azure_ad() -> tuple[str, str]:
        body = pick(ALNUM + "_~.-", 34)
        return f"{pick(ALNUM, 3)}{R.choice(DIGITS)}Q~{body}", body

    def discord_bot() -> tuple[str, str]:
        a = "M" + pick(ALNUM, 23)
        b = pick(B64URL, 6)
        c = pick(B64URL, 38)
        return f"{a}.{b}.{c}", c

    def telegram() -> tuple[str, str]:
        body = pick(B64URL, 33)
        return f"{pick(DIGITS, 10)}:AA{body}", body

    def mailgun_signing() -> tuple[str, str]:
        value = f"{pick(HEXL, 32)}-{pick(HEXL, 8)}-{pick(HEXL, 8)}"
        return value, value

    def mailchimp() -> tuple[str, str]:
        body = pick(HEXL, 32)
        return f"{body}-us{R.randint(1, 21)}", body

    def dynatrace() -> tuple[str, str]:
        a, b = pick(UPPER + DIGITS, 24), pick(UPPER + DIGITS, 64)
        return f"dt0c01.{a}.{b}", b

    def terraform() -> tuple[str, str]:
        body = pick(B64URL, 64)
        return f"{pick(ALNUM, 14)}.atlasv1.{body}", body

    def airtable() -> tuple[str, str]:
        body = pick(HEXL, 64)
        return f"pat{pick(ALNUM, 14)}.{body}", body

    def age() -> tuple[str, str]:
        body = pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
        return f"AGE-SECRET-KEY-1{body}", body

    def pypi() -> tuple[str, str]:
        body = pick(B64URL, 120)
        return f"pypi-AgEIcHlwaS5vcmc{body}", body

    def vault_legacy() -> tuple[str, str]:
        body = pick(ALNUM, 24)
        return f"s.{body}", body

    def onepassword() -> tuple[str, str]:
        parts = [pick(UPPER + DIGITS, n) for n in (6, 11, 5, 5, 5)]
        return "A3-" + "-".join(parts), "-".join(parts[1:])

    def grafana_sa() -> tuple[str, str]:
        body = pick(ALNUM, 32)
        return f"glsa_{body}_{pick(HEXL, 8)}", body

    def postman() -> tuple[str, str]:
        body = f"{pick(HEXL, 24)}-{pick(HEXL, 34)}"
        return f"PMAK-{body}", body

    def langsmith() -> tuple[str, str]:
        body = f"{pick(HEXL, 32)}_{pick(HEXL, 10)}"
        return f"lsv2_pt_{body}", body

    def notion() -> tuple[str, str]:
        body = pick(ALNUM, 35)
        return f"ntn_{pick(DIGITS, 11)}{body}", body

    return [
        ("anthropic", pre("sk-ant-api03-", B64URL, 93, "AA")),
        ("openai-project", pre("sk-proj-", B64URL, 64)),
        ("openai-legacy", pre("sk-", ALNUM, 48)),
        ("openrouter", pre("sk-or-v1-", HEXL, 64)),
        ("huggingface", pre("hf_", ALNUM, 34)),
        ("groq", pre("gsk_", ALNUM, 52)),
        ("replicate", pre("r8_", ALNUM, 37)),
        ("xai", pre("xai-", ALNUM, 80)),
        ("perplexity", pre("pplx-", ALNUM, 48)),
        ("nvidia", pre("nvapi-", B64URL, 64)),
        ("langsmith", langsmith),
        ("aws-access-key-id", pre("AKIA", UPPER + DIGITS, 16)),
        ("aws-sts-key-id", pre("ASIA", UPPER + DIGITS, 16)),
        ("google-api-key", pre("AIza", B64URL, 35)),
        ("google-oauth-access", pre("ya29.a0", B64URL, 120)),
        ("google-oauth-refresh", pre("1//0", B64URL, 96)),
        ("google-client-secret", pre("GOCSPX-", B64URL, 28)),
        ("azure-ad-client-secret", azure_ad),
        ("alibaba-key-id", pre("LTAI", ALNUM, 20)),
        ("digitalocean-pat", pre("dop_v1_", HEXL, 64)),
        ("digitalocean-oauth", pre("doo_v1_", HEXL, 64)),
        ("heroku-v2", pre("HRKU-AA", B64URL, 58)),
        ("vault-service", pre("hvs.", B64URL, 95)),
        ("vault-batch", pre("hvb.", B64URL, 140)),
        ("vault-legacy", vault_legacy),
        ("terraform-cloud", terraform),
        ("pulumi", pre("pul-", HEXL, 40)),
        ("doppler", pre("dp.pt.", ALNUM, 43)),
        ("databricks", pre("dapi", HEXL, 32)),
        ("planetscale", pre("pscale_tkn_", B64URL, 43)),
        ("dynatrace", dynatrace),
        ("new-relic-user-key", pre("NRAK-", UPPER + DIGITS, 27)),
        ("grafana-cloud", pre("glc_", B64, 60)),
        ("grafana-service-account", grafana_sa),
        ("sentry-user", pre("sntryu_", HEXL, 64)),
        ("github-classic", pre("ghp_", ALNUM, 36)),
        ("github-oauth", pre("gho_", ALNUM, 36)),
        ("github-app", pre("ghs_", ALNUM, 36)),
        ("github-fine-grained", pre("github_pat_11", ALNUM + "_", 80)),
        ("gitlab-pat", pre("glpat-", B64URL, 20)),
        ("gitlab-deploy", pre("gldt-", B64URL, 20)),
        ("gitlab-runner", pre("glrt-", B64URL, 20)),
        ("gitlab-trigger", pre("glptt-", HEXL, 40)),
        ("gitlab-registration", pre("GR1348941", B64URL, 20)),
        ("atlassian", pre("ATATT3xFfGF0", B64URL, 180)),
        ("bitbucket-app", pre("ATBB", ALNUM, 32)),
        ("npm", pre("npm_", ALNUM, 36)),
        ("pypi", pypi),
        ("rubygems", pre("rubygems_", HEXL, 48)),
        ("docker-hub", pre("dckr_pat_", B64URL, 27)),
        ("artifactory", pre("AKCp", ALNUM, 69)),
        ("postman", postman),
        ("prefect", pre("pnu_", ALNUM, 36)),
        ("linear", pre("lin_api_", ALNUM, 40)),
        ("notion", notion),
        ("figma", pre("figd_", B64URL, 40)),
        ("airtable", airtable),
        ("onepassword-secret-key", onepassword),
        ("slack-bot", slack_bot),
        ("slack-user", slack_user),
        ("slack-app", pre("xapp-1-", UPPER + DIGITS + "-", 60)),
        ("slack-webhook", pre("https://hooks.slack.com/services/T0", UPPER + DIGITS + "/", 44)),
        ("discord-webhook",
         pre("https://discord.com/api/webhooks/1234567890123/", B64URL, 68)),
        ("discord-bot", discord_bot),
        ("telegram-bot", telegram),
        ("twilio-api-key", pre("SK", HEXL, 32)),
        ("sendgrid", sendgrid),
        ("brevo", pre("xkeysib-", HEXL, 64, "-" + "".join(R.choice(ALNUM) for _ in range(16)))),
        ("mailgun-private", pre("key-", HEXL, 32)),
        ("mailgun-signing", mailgun_signing),
        ("mailchimp", mailchimp),
        ("stripe-secret", pre("sk_live_51", ALNUM, 96)),
        ("stripe-restricted", pre("rk_live_51", ALNUM, 96)),
        ("stripe-test", pre("sk_test_51", ALNUM, 96)),
        ("stripe-webhook", pre("whsec_", ALNUM, 32)),
        ("square", pre("sq0atp-", B64URL, 22)),
        ("shopify-admin", pre("shpat_", HEXL, 32)),
        ("shopify-shared-secret", pre("shpss_", HEXL, 32)),
        ("shippo", pre("shippo_live_", HEXL, 40)),
        ("easypost", pre("EZAK", ALNUM, 54)),
        ("mapbox-secret", pre("sk.eyJ1IjoiYWNtZSIsImEiOiJjbHgifQ.", B64URL, 22)),
        ("jwt", jwt),
        ("age-secret-key", age),
    ]


_TOKEN_CONTEXTS = (
    "export {NAME}={t}",
    "{NAME}={t}",
    '{{"{name}": "{t}"}}',
    "  {name}: {t}",
    'client = Client("{t}")',
    "I rotated it, the new one is {t} - can you update the deploy?",
    "curl -H 'Authorization: Bearer {t}' https://api.example.com/v1/me",
    "Error: 401 Unauthorized for token {t} (expired?)",
    "[default]\n{name} = {t}",
    "os.environ.setdefault('{NAME}', '{t}')",
)


def token_formats() -> Iterator[Case]:
    for family, make in _tokens():
        name = family.replace("-", "_") + "_credential"
        for context in R.sample(_TOKEN_CONTEXTS, 3):
            token, secret = make()
            text = context.format(NAME=name.upper(), name=name, t=token)
            yield "token_format", text, secret


# ------------------------------------------------------------------ value extents

def value_extents() -> Iterator[Case]:
    schemes = ("postgres", "postgresql", "mysql", "mongodb", "mongodb+srv", "redis", "amqp",
               "https", "ftp", "smtp", "mssql")
    for special in "@/#:%!?&;=+$,":
        pw = password("") + special + password("", 6) + special + "x9"
        scheme = R.choice(schemes)
        yield ("value_extent", f"DATABASE_URL={scheme}://svc_user:{pw}@db-{R.randint(1, 9)}"
               f".internal.example:5432/app?sslmode=require", pw)
        yield ("value_extent", f"connect with {scheme}://admin:{pw}@10.0.0.{R.randint(2, 250)}"
               f"/prod then run the migration", pw)
    for special in ",&;#!$()[]{}<>|*^~`":
        pw = password("") + special + password("", 5) + special + "7Q"
        if special == "`":
            continue
        yield "value_extent", f"DB_PASSWORD={pw}", pw
        yield "value_extent", f"export SMTP_PASS={pw}", pw
        yield "value_extent", f"  db_password = {pw}", pw
    for _ in range(8):
        words = " ".join(R.choice(["correct", "horse", "Battery", "staple", "9lives", "Zebra",
                                   "quartz", "41!", "mango"]) for _ in range(4))
        yield ("value_extent",
               f'database:\n  password: "{words} {pick(ALNUM, 4)}"\n  port: 5432', words)
        yield "value_extent", f"auth:\n  secret: '{words} {pick(ALNUM, 6)}'", words
        yield "value_extent", f"passphrase = \"{words} {pick(DIGITS, 3)}\"", words
    for _ in range(8):
        a, b = password(""), password("")
        yield ("value_extent", f'{{"user": "svc", "password": "{a}\\"{b}", "host": "db"}}',
               f'{a}\\"{b}')
        yield "value_extent", f'{{"client_secret": "{a}\\\\{b}", "tenant": "acme"}}', b
        yield "value_extent", f"password: '{a}''{b}'", f"{a}''{b}"


# ------------------------------------------------------------------ mistaken values

def mistaken_values() -> Iterator[Case]:
    for _ in range(6):
        head = pick(ALNUM, R.randint(2, 3))
        tail = pick(LOWER, R.randint(6, 10))
        yield "mistaken_value", f"password: {head}= {tail}", f"{head}= {tail}"
        yield "mistaken_value", f"  password: {head}: {tail}99", f"{tail}99"
    for _ in range(5):
        pw = "$" + pick(LOWER + DIGITS, 10)
        yield "mistaken_value", f"password: '{pw}'", pw
        yield "mistaken_value", f"MYSQL_ROOT_PASSWORD='{pw}'", pw
    for _ in range(4):
        pw = "-" + pick(ALNUM, 12)
        yield "mistaken_value", f"password: {pw}", pw
        pw = "#" + pick(ALNUM, 12)
        yield "mistaken_value", f'password: "{pw}"', pw
        pw = pick(DIGITS, 10)
        yield "mistaken_value", f"pin_password={pw}", pw
        pw = pick(LOWER, 12)
        yield "mistaken_value", f"DB_PASSWORD={pw}", pw
        pw = pick(LOWER, 6) + "." + pick(LOWER, 7)
        yield "mistaken_value", f"password: {pw}", pw
        pw = pick(ALNUM, 20)
        yield "mistaken_value", f"token: str = \"{pw}\"", pw
        pw = password("", 12)
        yield "mistaken_value", f"The wifi password is {pw}, please don't share it.", pw
        pw = password("!&", 12)
        yield "mistaken_value", f"I changed my password to {pw} yesterday", pw
        pw = pick(ALNUM, 24)
        yield "mistaken_value", f"secret: None if debug else \"{pw}\"", pw


# ------------------------------------------------------------------ command arguments

def command_arguments() -> Iterator[Case]:
    for _ in range(4):
        pw = password("!@#%^*-_=+")
        user = pick(LOWER, 6)
        yield "cli_argument", f"curl -u {user}:{pw} https://api.example.com/v2/items", pw
        yield "cli_argument", f"curl --user '{user}:{pw}' -X POST https://x.example/api", pw
        yield "cli_argument", f'curl -s -u "{user}:{pw}" https://ci.example/job/build', pw
        yield "cli_argument", f"docker login -u {user} -p {pw} registry.example.com", pw
        yield "cli_argument", f"podman login registry.example.io -u {user} -p '{pw}'", pw
        yield "cli_argument", f"helm registry login ghcr.io --username {user} --password {pw}", pw
        yield "cli_argument", f"mysql -h db.internal -u root -p{pw} app_prod", pw
        yield "cli_argument", f"mysqldump -uroot -p'{pw}' --all-databases > dump.sql", pw
        yield "cli_argument", f"sshpass -p '{pw}' ssh deploy@10.1.2.3", pw
        yield "cli_argument", f"redis-cli -h cache -a {pw} ping", pw
        yield "cli_argument", f"mongosh mongodb://db:27017 -u admin -p {pw}", pw
        yield "cli_argument", f"ldapsearch -x -D cn=admin,dc=ex,dc=org -w {pw} -b dc=ex", pw
        yield "cli_argument", f"keytool -importkeystore -srcstorepass {pw} -deststorepass {pw}", pw
        yield "cli_argument", f"openssl pkcs12 -export -in c.pem -passout pass:{pw} -out c.p12", pw
        yield "cli_argument", f"sqlcmd -S db -U sa -P '{pw}' -Q 'select 1'", pw
        yield "cli_argument", f"7z a -p{pw} backup.7z ./data", pw
        yield "cli_argument", f"zip -P {pw} -r secrets.zip ./keys", pw
        yield "cli_argument", f"smbclient //fs/share -U {user}%{pw}", pw
        yield "cli_argument", f"htpasswd -b -c .htpasswd {user} {pw}", pw
        yield "cli_argument", f"wget --user={user} --password={pw} https://x.example/f.tgz", pw
        yield "cli_argument", f"psql \"host=db user={user} password={pw} dbname=app\"", pw
        yield "cli_argument", f"git clone https://{user}:{pw}@git.example.com/team/repo.git", pw
        yield "cli_argument", f"az login -u {user}@example.com -p {pw}", pw
        yield "cli_argument", f"xfreerdp /v:10.0.0.5 /u:{user} /p:{pw}", pw
        yield "cli_argument", f"curl -u{user}:{pw} https://api.example.com/v2/items", pw
        yield ("cli_argument",
               f"echo '{pw}' | docker login -u {user} --password-stdin ghcr.io", pw)
        yield "cli_argument", f"docker login -u {user} --password-stdin <<< '{pw}'", pw
        yield "cli_argument", f"mysql --user=root --password='{pw}' -h db shop", pw


# ------------------------------------------------------------------ config files

def config_files() -> Iterator[Case]:
    for _ in range(4):
        pw = password("!@#%^&*", 14)
        user = pick(LOWER, 7)
        host = f"{pick(LOWER, 6)}.example.com"
        yield "config_file", f"machine {host} login {user} password {pw}", pw
        yield "config_file", f"machine {host}\n  login {user}\n  password {pw}\n", pw
        yield "config_file", f"default login {user} password {pw}", pw
        yield "config_file", f"{host}:5432:app:{user}:{pw}", pw
        yield "config_file", f"*:*:*:{user}:{pw}", pw
        yield ("config_file",
               f"db.internal:6432:analytics:{user}:{pw}\nlocalhost:5432:*:postgres:x", pw)
        tok = pick(B64, 40)
        yield "config_file", f"//npm.example.com/:_authToken={tok}", tok
        auth = base64.b64encode(f"{user}:{pw}".encode()).decode()
        yield "config_file", f"//registry.example.com/:_auth={auth}", auth
        yield "config_file", f'{{"auths": {{"ghcr.io": {{"auth": "{auth}"}}}}}}', auth
        yield "config_file", f"[pypi]\nusername = __token__\npassword = {pw}", pw
        yield "config_file", f"[distutils]\n[testpypi]\nusername: {user}\npassword: {pw}", pw
        key = pick(B64, 40)
        yield ("config_file", f"[default]\naws_access_key_id = AKIA{pick(UPPER + DIGITS, 16)}\n"
               f"aws_secret_access_key = {key}\n", key)
        tok = pick(B64URL, 60)
        yield ("config_file", f"users:\n- name: ci\n  user:\n    token: {tok}\n", tok)
        data = pick(B64, 80)
        yield "config_file", f"    client-key-data: {data}", data
        yield "config_file", f"https://{user}:{pw}@github.com", pw
        acct = pick(B64, 86) + "=="
        yield ("config_file", "DefaultEndpointsProtocol=https;AccountName=acme;"
               f"AccountKey={acct};EndpointSuffix=core.windows.net", acct)
        sak = pick(B64, 43) + "="
        yield ("config_file", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName="
               f"Root;SharedAccessKey={sak}", sak)
        sig = pick(B64, 43).replace("+", "%2B").replace("/", "%2F") + "%3D"
        yield ("config_file", "https://acme.blob.core.windows.net/c?sv=2022-11-02&ss=b&srt=o"
               f"&sp=r&se=2026-12-31&sig={sig}", sig)
        wg = pick(B64, 43) + "="
        yield "config_file", f"[Interface]\nPrivateKey = {wg}\nAddress = 10.8.0.2/24", wg
        yield "config_file", f"spring.datasource.password={pw}", pw
        yield "config_file", f'<add key="ClearTextPassword" value="{pw}" />', pw


# ------------------------------------------------------------------ key blocks

def _b64_lines(n_lines: int, width: int = 64) -> list[str]:
    return [pick(B64, width) for _ in range(n_lines)]


def key_blocks() -> Iterator[Case]:
    for label in ("RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY",
                  "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY"):
        lines = _b64_lines(5)
        block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
        yield "key_block", block, lines[2]
        escaped = block.replace("\n", "\\n")
        yield "key_block", f'{{"type": "service_account", "private_key": "{escaped}\\n"}}', lines[3]
    lines = _b64_lines(6)
    pgp = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + "\n".join(lines)
           + "\n=" + pick(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----")
    yield "key_block", pgp, lines[4]
    for _ in range(3):
        pub = _b64_lines(3)
        priv = _b64_lines(4)
        mac = pick(HEXL, 64)
        ppk = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\n"
               "Public-Lines: 3\n" + "\n".join(pub) + "\nPrivate-Lines: 4\n" + "\n".join(priv)
               + f"\nPrivate-MAC: {mac}")
        yield "key_block", ppk, priv[1]
        yield "key_block", ppk, mac
    lines = _b64_lines(4)
    ssh2 = ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-2026\"\n"
            + "\n".join(lines) + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----")
    yield "key_block", ssh2, lines[1]
    lines = _b64_lines(3)
    truncated = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines)
    yield "key_block", truncated + "\n(the rest got cut off in my terminal)", lines[2]


# ------------------------------------------------------------------ key-like values

def key_like_values() -> Iterator[Case]:
    names = ("DD_API_KEY", "DD_APP_KEY", "DATADOG_APP_KEY", "TWILIO_AUTH_TOKEN",
             "HEROKU_API_KEY", "AZURE_STORAGE_KEY", "ALGOLIA_ADMIN_KEY", "CLOUDFLARE_API_TOKEN",
             "OKTA_CLIENT_SECRET", "AUTH0_CLIENT_SECRET", "SESSION_SECRET", "JWT_SECRET",
             "ENCRYPTION_KEY", "SIGNING_KEY", "WEBHOOK_SECRET", "MASTER_KEY", "LICENSE_KEY",
             "PUSHER_APP_SECRET", "SENTRY_AUTH_TOKEN", "MAPBOX_ACCESS_TOKEN", "X_API_KEY")
    makers: tuple[Callable[[], str], ...] = (
        lambda: pick(HEXL, 32), lambda: pick(HEXL, 40),
        lambda: str(uuid.UUID(int=R.getrandbits(128))),
        lambda: pick(ALNUM, 32), lambda: pick(B64, 44), lambda: pick(UPPER + LOWER, 28),
    )
    for name in names:
        for fmt in R.sample(("{N}={v}", '{n}: "{v}"', '"{c}": "{v}"', "{n} = '{v}'",
                             "-H 'X-Api-Key: {v}'", "{N}: {v}"), 2):
            value = R.choice(makers)()
            camel = name.lower().split("_")[0] + "".join(
                p.title() for p in name.lower().split("_")[1:])
            yield "key_like", fmt.format(N=name, n=name.lower(), c=camel, v=value), value


# ------------------------------------------------------------------ shapes of captured talk
# Appended after the classes above, so their cases (and the seeded values) stay as they were.

def _aws_pair() -> tuple[str, str]:
    return R.choice(("AKIA", "ASIA")) + pick(UPPER + DIGITS, 16), pick(B64, 40)


def csv_exports() -> Iterator[Case]:
    """Credential files a cloud console or CLI hands out, pasted whole."""
    for _ in range(3):
        key_id, secret = _aws_pair()
        user = R.choice(("ci-deployer", "backup-bot", "jdoe", "terraform"))
        yield ("csv_export", "User name,Password,Access key ID,Secret access key,Console login "
               f"link\n{user},,{key_id},{secret},https://{R.randrange(10**11, 10**12)}"
               ".signin.aws.amazon.com/console", secret)
        pw = password()
        yield ("csv_export", "User name,Password,Access key ID,Secret access key\n"
               f"{user},{pw},{key_id},{secret}", pw)
        yield ("csv_export", "here is the file:\nAccess key ID,Secret access key\n"
               f"{key_id},{secret}\n", secret)
    for _ in range(3):
        secret = pick(ALNUM, 30)
        yield ("csv_export", f"AccessKeyId,AccessKeySecret\nLTAI{pick(ALNUM, 20)},{secret}", secret)
    for _ in range(2):
        token = pick(B64URL, 36)
        yield ("csv_export", f"name,client_id,client_secret\nbilling,{pick(HEXL, 20)},{token}\n"
               f"search,{pick(HEXL, 20)},{pick(B64URL, 36)}", token)
    for _ in range(2):  # quoted fields holding commas (and doubled quotes)
        key_id, secret = _aws_pair()
        yield ("csv_export", "User name,Password,Access key ID,Secret access key\n"
               f'"Doe, Jane",,{key_id},{secret}', secret)
        pw = f'{password()},x"{pick(ALNUM, 3)}'
        quoted = pw.replace('"', '""')
        yield ("csv_export", f'login,password\n"ops, nightly","{quoted}"', pw.split(",")[0])


def yaml_phrases() -> Iterator[Case]:
    """Passwords people chose as phrases, in YAML."""
    phrases = ("Blue Ocean Mornings 2031", "an Apple a Day 7!", "correct Horse battery 42",
               "Late train to Oslo #9", "the Red Fox runs 12x", "my Winter Garden 88?")
    for phrase in phrases:
        fmt = R.choice(("password: {p}", "database:\n  host: db\n  password: {p}\n  port: 5432",
                        "  smtp_password: {p}", "- user: ops\n  passphrase: {p}"))
        yield "yaml_phrase", fmt.format(p=phrase), phrase
    for phrase in phrases[:4]:
        block = R.choice((">-", "|", "|-"))
        yield ("yaml_phrase", f"mail:\n  password: {block}\n    {phrase}\n  user: relay", phrase)


def messaging_keys() -> Iterator[Case]:
    """Telephony and messaging providers' keys with a fixed prefix."""
    for _ in range(3):
        body = pick("0123456789ABCDEF", 32) + "_" + pick(B64URL, 22)
        yield ("messaging_key", R.choice(("TELNYX_API_KEY={k}", "telnyx key is {k}",
                                          'headers = {{"Authorization": "Bearer {k}"}}'))
               .format(k="KEY" + body), body)
    for prefix in ("MA", "SA", "MA"):
        body = pick(UPPER + DIGITS, 18)
        yield ("messaging_key", R.choice(("plivo auth id {k}", "PLIVO_AUTH_ID={k}",
                                          "client = plivo.RestClient('{k}', token)"))
               .format(k=prefix + body), body)
    for _ in range(3):
        raw = f"tok:{uuid.UUID(int=R.getrandbits(128))}:1:0".encode()
        token = base64.b64encode(raw).decode()
        yield ("messaging_key", R.choice(("intercom access token {t}", "INTERCOM_TOKEN={t}",
                                          "curl -H 'Authorization: Bearer {t}' api.intercom.io"))
               .format(t=token), token[5:])
    for prefix in ("SK", "AC"):
        body = pick(HEXL, 32)
        yield "messaging_key", f"twilio sid {prefix}{body} for the sms relay", body


def pgpass_lines() -> Iterator[Case]:
    """`.pgpass` lines at a line start, quoted in a command and inside a sentence."""
    hosts = ("db.internal", "localhost", "*", "10.0.4.17", "pg-primary.prod")
    for host in hosts:
        pw = password("!@#%^&*-_=+")
        line = f"{host}:{R.choice(('5432', '6432', '*'))}:{R.choice(('app', '*', 'orders'))}:" \
               f"{R.choice(('app_user', 'postgres', 'replicator'))}:{pw}"
        fmt = R.choice(("{l}", "echo '{l}' >> ~/.pgpass", "my ~/.pgpass has `{l}` in it",
                        'printf "%s\\n" "{l}" > ~/.pgpass', "add this line: {l} and chmod 600"))
        yield "pgpass_line", fmt.format(l=line), pw


def base64_inline() -> Iterator[Case]:
    """Credentials written base64-encoded right after the word that says what they are."""
    for raw in ("deploy:" + password(), password(), "svc-" + pick(ALNUM, 20), password(),
                "admin:" + password()):
        value = base64.b64encode(raw.encode()).decode()
        fmt = R.choice(("the password, base64-encoded: {v}", "secret (base64) {v}",
                        "token in base64 is {v}", "base64 credentials: {v}",
                        "here's the b64 password {v} - decode it", "api key (b64): `{v}`"))
        yield "base64_inline", fmt.format(v=value), value


def prose_passwords() -> Iterator[Case]:
    """"password" said before the value, without `is` or `=` between."""
    formats = ("use the password {p} for the admin login", "log in with password {p} and change it",
               "password for the staging box: {p}", "the wifi passphrase {p} works again",
               "I reset it, new password {p}", "password for root on bastion = {p}",
               "try passcode {p} at the door")
    for fmt in formats:
        pw = password("!@#$%&*-_+?")
        yield "prose_password", fmt.format(p=pw), pw


def cloud_key_pairs() -> Iterator[Case]:
    """A secret key written next to its access key id in a sentence, with no label."""
    formats = ("keys are {i} / {s}", "I set the access key {i} with secret {s} yesterday",
               "creds: {i} {s}", "use {i} and {s} for the uploader",
               "({i}, {s}) is the pair for the backup user")
    for fmt in formats:
        key_id, secret = _aws_pair()
        yield "cloud_key_pair", fmt.format(i=key_id, s=secret), secret
    secret = pick(ALNUM, 30)
    yield "cloud_key_pair", f"aliyun pair LTAI{pick(ALNUM, 20)} {secret}", secret


GENERATORS = (token_formats, value_extents, mistaken_values, command_arguments, config_files,
              key_blocks, key_like_values, csv_exports, yaml_phrases, messaging_keys,
              pgpass_lines, base64_inline, prose_passwords, cloud_key_pairs)


def cases() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for generate in GENERATORS:
        for klass, text, secret in generate():
            assert secret in text, (klass, text, secret)
            assert len(secret) >= 8, (klass, text, secret)
            out.append({"id": f"{klass}-{len(out):03d}", "class": klass, "text": text,
                        "secret": secret})
    return out


def load() -> list[dict[str, str]]:
    """The stored corpus (what the tests and benchmarks/bench_redact.py run)."""
    return [json.loads(line) for line in OUT.read_text("utf-8").splitlines() if line]


def leaked(secret: str, stored: str) -> str | None:
    """The first 8-character piece of `secret` found in `stored`, if any."""
    for i in range(len(secret) - 7):
        if secret[i : i + 8] in stored:
            return secret[i : i + 8]
    return None


def main() -> None:
    rows = cases()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"wrote {len(rows)} cases to {OUT}")


if __name__ == "__main__":
    main()
