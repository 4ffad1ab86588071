"""Token families with a fixed shape (pure data): what `redact` recognises without context.

Each entry is (kind, triggers, pattern). `triggers` are lowercase substrings, at least one of
which occurs in any text the pattern can match: `redact` skips a family whose triggers are all
absent and compiles a pattern only the first time one is present, so a hook pays for the few
families its text mentions, not for all of them (about 80 patterns).

The list follows the provider families of the gitleaks and detect-secrets rule sets (MIT and
Apache-2.0; their patterns are not copied: each is written here from the provider's published
token format and tested in tests/hostile/secrets.jsonl). A family is listed when its tokens carry
a prefix or a structure that prose and code never produce; secrets without one (Datadog keys,
Twilio auth tokens, Heroku's UUID keys) are caught by their assignment (`DD_API_KEY=...`) in
`redact`. Patterns use bounded, possessive quantifiers so every scan is linear.
"""

from __future__ import annotations

# Not preceded by a token character: `xsk_live_` is not a Stripe key, `ahf_` not Hugging Face.
_B = r"(?<![A-Za-z0-9_])"
_W = r"[A-Za-z0-9_\-]"  # URL-safe base64 / token alphabet
_B64 = r"[A-Za-z0-9+/]"

FAMILIES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # ---- AI providers
    ("anthropic_key", ("sk-ant-",), rf"sk-ant-{_W}{{20,400}}+"),
    ("openai_key", ("sk-",), rf"{_B}sk-(?:proj-|svcacct-|admin-|or-v1-|None-)?{_W}{{20,400}}+"),
    ("huggingface_token", ("hf_", "api_org_"), rf"{_B}(?:hf|api_org)_[A-Za-z0-9]{{30,64}}+"),
    ("groq_key", ("gsk_",), rf"{_B}gsk_[A-Za-z0-9]{{40,64}}+"),
    ("replicate_token", ("r8_",), rf"{_B}r8_[A-Za-z0-9]{{30,48}}+"),
    ("xai_key", ("xai-",), rf"{_B}xai-[A-Za-z0-9]{{40,100}}+"),
    ("perplexity_key", ("pplx-",), rf"{_B}pplx-[A-Za-z0-9]{{40,64}}+"),
    ("nvidia_key", ("nvapi-",), rf"{_B}nvapi-{_W}{{40,80}}+"),
    ("langsmith_key", ("lsv2_",), rf"{_B}lsv2_(?:pt|sk)_[a-f0-9]{{32}}_[a-f0-9]{{10}}"),
    # ---- cloud
    ("aws_access_key_id", ("akia", "asia", "abia", "acca", "a3t"),
     r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("google_api_key", ("aiza",), rf"AIza{_W}{{35}}"),
    ("google_oauth_token", ("ya29.",), rf"{_B}ya29\.{_W}{{20,2048}}+"),
    ("google_refresh_token", ("1//0",), rf"(?<![A-Za-z0-9/])1//0{_W}{{30,512}}+"),
    ("google_client_secret", ("gocspx-",), rf"GOCSPX-{_W}{{20,64}}+"),
    ("azure_client_secret", ("q~",),
     r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,40}+"),
    ("azure_sas_signature", ("sig=",), r"(?<=[?&;])sig=(?P<secret>[A-Za-z0-9%+/=]{16,256}+)"),
    ("alibaba_access_key_id", ("ltai",), rf"{_B}LTAI[A-Za-z0-9]{{20}}(?![A-Za-z0-9])"),
    ("digitalocean_token", ("_v1_",), rf"{_B}do[opr]_v1_[a-f0-9]{{64}}"),
    ("heroku_api_key", ("hrku-",), rf"{_B}HRKU-{_W}{{20,80}}+"),
    ("vault_token", ("hvs.", "hvb.", "hvr."), rf"{_B}hv[sbr]\.{_W}{{20,400}}+"),
    ("vault_token", ("s.", "b."),
     r"(?<![A-Za-z0-9_.\-/])[sb]\.(?=[A-Za-z]*[0-9])(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{24}(?![A-Za-z0-9_.\-])"),
    ("terraform_token", ("atlasv1",), rf"[A-Za-z0-9]{{14}}\.atlasv1\.{_W}{{60,70}}+"),
    ("pulumi_token", ("pul-",), rf"{_B}pul-[a-f0-9]{{40}}"),
    ("doppler_token", ("dp.",), rf"{_B}dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9_\-.]{{40,64}}+"),
    ("scalingo_token", ("tk-us-",), rf"{_B}tk-us-{_W}{{48}}"),
    ("flyio_token", ("fo1_", "fm1", "fm2_"),
     rf"{_B}(?:fo1_{_W}{{43}}|fm[12][ar]?_{_B64}{{60,}}+={{0,3}})"),
    ("openshift_token", ("sha256~",), rf"sha256~{_W}{{43}}"),
    ("databricks_token", ("dapi",), rf"{_B}dapi[a-f0-9]{{32}}(?:-\d)?"),
    ("planetscale_token", ("pscale_",), rf"{_B}pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_\-.=]{{32,64}}+"),
    ("dynatrace_token", ("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("new_relic_key", ("nrak-", "nrii-", "nrjs-"), r"NR(?:AK|II|JS)-[A-Za-z0-9\-]{19,40}+"),
    ("grafana_token", ("glc_", "glsa_", "eyjrijoi"),
     rf"{_B}(?:glc_{_B64}{{32,400}}+={{0,3}}|glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}"
     r"|eyJrIjoi[A-Za-z0-9]{70,400}+={0,3})"),
    ("sentry_token", ("sntrys_", "sntryu_"),
     rf"{_B}sntry[su]_{_B64}{{40,400}}+={{0,2}}(?:_{_B64}{{43}})?"),
    # ---- source hosting, CI and package registries
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"gh[pousr]_[A-Za-z0-9]{20,255}+|github_pat_[A-Za-z0-9_]{20,255}+"),
    ("gitlab_token",
     ("glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-",
      "glsoat-", "glffct-", "gr1348941"),
     rf"(?:gl(?:pat|dt|ptt|rt|cbt|ft|imt|agent|oas|soat|ffct)-|GR1348941){_W}{{20,300}}+"
     r"(?:\.[a-z0-9]{9})?"),
    ("bitbucket_token", ("atbb", "atctt"), rf"{_B}AT(?:BB|CTT)[A-Za-z0-9_\-=]{{24,}}+"),
    ("atlassian_token", ("atatt3",), rf"{_B}ATATT3[A-Za-z0-9_\-=]{{40,300}}+"),
    ("npm_token", ("npm_",), rf"{_B}npm_[A-Za-z0-9]{{36}}"),
    ("pypi_token", ("pypi-age",), rf"pypi-AgE{_W}{{40,1000}}+"),
    ("rubygems_token", ("rubygems_",), rf"{_B}rubygems_[a-f0-9]{{48}}"),
    ("clojars_token", ("clojars_",), r"CLOJARS_[A-Za-z0-9]{60}"),
    ("docker_hub_token", ("dckr_pat_", "dckr_oat_"), rf"{_B}dckr_(?:pat|oat)_{_W}{{20,80}}+"),
    ("artifactory_token", ("akcp", "cmvmd"),
     rf"{_B}(?:AKCp[A-Za-z0-9]{{60,80}}+|cmVmd[A-Za-z0-9]{{59}})"),
    ("postman_key", ("pmak-",), r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}"),
    ("prefect_key", ("pnu_",), rf"{_B}pnu_[A-Za-z0-9]{{36}}"),
    ("readme_key", ("rdme_",), rf"{_B}rdme_[a-z0-9]{{70}}"),
    ("linear_key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),
    ("notion_token", ("ntn_", "secret_"),
     rf"{_B}(?:ntn_[0-9]{{11}}[A-Za-z0-9]{{35}}|secret_[A-Za-z0-9]{{43}})"),
    ("figma_token", ("figd_",), rf"{_B}figd_{_W}{{30,60}}+"),
    ("airtable_token", ("pat",), rf"{_B}pat[A-Za-z0-9]{{14}}\.[a-f0-9]{{64}}"),
    ("sourcegraph_token", ("sgp_",), rf"{_B}sgp_(?:[a-fA-F0-9]{{16}}_|local_)?[a-fA-F0-9]{{40}}"),
    ("onepassword_token", ("ops_eyj", "a3-"),
     rf"{_B}(?:ops_eyJ{_B64}{{100,}}+={{0,3}}|A3-[A-Z0-9]{{6}}-(?:[A-Z0-9]{{11}}|[A-Z0-9]{{6}}-[A-Z0-9]{{5}})"
     r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})"),
    # ---- messaging, mail and payments
    ("slack_token", ("xox", "xapp-"),
     r"xox(?:[abposre]|e\.xox[bp])-[A-Za-z0-9\-]{10,300}+|xapp-\d-[A-Za-z0-9\-]{10,300}+"),
    ("slack_webhook", ("hooks.slack.com",),
     r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/+\-]{8,200}+)"),
    ("discord_webhook", ("discord",),
     r"discord(?:app)?\.com/api/webhooks/(?P<secret>[0-9]{5,30}/[A-Za-z0-9_\-]{20,100}+)"),
    ("teams_webhook", ("webhook.office.com",),
     r"webhook\.office\.com/webhookb2/(?P<secret>[A-Za-z0-9@/\-]{40,300}+)"),
    ("discord_bot_token", (".",),
     r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}+"),
    ("telegram_bot_token", (":aa",), r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}"),
    ("twilio_key", ("sk", "ac"), r"(?<![A-Za-z0-9])(?:SK|AC)[0-9a-f]{32}(?![A-Za-z0-9])"),
    # Telnyx v2 keys: `KEY`, 32 upper-case hex digits, `_`, 22 URL-safe characters.
    ("telnyx_key", ("key",), rf"{_B}KEY(?P<secret>[0-9A-F]{{32}}_{_W}{{22}})(?!{_W})"),
    # Plivo auth ids: `MA` (account) or `SA` (subaccount) and 18 upper-case letters/digits.
    ("plivo_auth_id", ("ma",), rf"{_B}MA(?P<secret>[A-Z0-9]{{18}})(?![A-Za-z0-9])"),
    ("plivo_auth_id", ("sa",), rf"{_B}SA(?P<secret>[A-Z0-9]{{18}})(?![A-Za-z0-9])"),
    # Intercom access tokens are base64 of `tok:<uuid>:1:0`, so they open with `dG9rO`.
    ("intercom_token", ("dg9ro",), rf"{_B}dG9rO[A-Za-z0-9+/]{{40,120}}+={{0,2}}"),
    ("sendgrid_key", ("sg.",), rf"{_B}SG\.{_W}{{16,32}}\.{_W}{{16,64}}+"),
    ("sendinblue_key", ("xkeysib-", "xsmtpsib-"),
     r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("mailgun_key", ("key-", "pubkey-"), rf"{_B}(?:pub)?key-[a-f0-9]{{32}}(?![A-Za-z0-9])"),
    ("mailgun_key", ("-",),
     r"(?<![A-Za-z0-9])[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}(?![A-Za-z0-9\-])"),
    ("mailchimp_key", ("-us",), r"(?<![A-Za-z0-9])[a-f0-9]{32}-us[0-9]{1,2}(?![A-Za-z0-9])"),
    ("stripe_key", ("_live_", "_test_", "_prod_"),
     rf"{_B}(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{{10,255}}+"),
    ("stripe_webhook_secret", ("whsec_",), rf"{_B}whsec_[A-Za-z0-9+/=]{{16,128}}+"),
    ("square_token", ("sq0", "eaaa"),
     rf"{_B}(?:sq0(?:atp|csp|idp)-{_W}{{22,60}}+|EAAA{_W}{{40,80}}+)"),
    ("facebook_token", ("eaac", "eaam"), rf"{_B}EAA[CM][A-Za-z0-9]{{40,}}+"),
    ("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"),
     r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("shippo_token", ("shippo_",), r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("flutterwave_key", ("flwseck", "flwpubk"),
     r"FLW(?:SECK|PUBK)(?:_TEST)?-[A-Za-z0-9]{12,32}(?:-X)?"),
    ("duffel_token", ("duffel_",), rf"duffel_(?:test|live)_{_W}{{43}}"),
    ("easypost_key", ("ezak", "eztk"), rf"{_B}EZ[AT]K[A-Za-z0-9]{{54}}"),
    ("mapbox_token", ("k.eyj",), rf"{_B}[ps]k\.eyJ{_W}{{10,}}+\.{_W}{{10,}}+"),
    # ---- signed tokens and key material
    ("jwt", ("eyj",), rf"eyJ(?<!{_W}eyJ){_W}{{8,}}+\.{_W}{{8,}}+\.{_W}*+"),
    ("age_secret_key", ("age-secret-key-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{50,70}+"),
    ("age_secret_key", ("age-plugin-",), r"AGE-PLUGIN-[A-Z0-9\-]{1,40}1[0-9A-Z]{20,}+"),
    ("wireguard_key", ("privatekey",),
     r"PrivateKey[\x20\t]*=[\x20\t]*(?P<secret>[A-Za-z0-9+/]{42,43}=)"),
)
