#!/usr/bin/env bash
# s3-tests.sh -- run Ceph's S3 compatibility suite (ceph/s3-tests, read from
# its public repository; not part of Shoal) against `shoal up`'s gateway the
# way ../shared/s3-tests/run.sh measured radosgw, for docs/S3-COMPATIBILITY.md.
#
#   docs/bench/s3-tests.sh SUITE_DIR [OUT_DIR]
#
# SUITE_DIR: a checkout of ceph/s3-tests (the reference used commit
# 8f0ae7b404a3a2fcf7038bf1e6bf29544fe9b6a3). Needs Debian's python3-boto3,
# python3-pytest, python3-pytest-timeout, python3-munch, python3-gevent,
# python3-isodate, python3-requests, python3-tz, python3-httplib2,
# python3-lxml, python3-yaml, and a built ./shoal. For a newer botocore
# than Debian's (docs/S3-COMPATIBILITY.md ran 1.43.11): PYTHONPATH=DIR,
# DIR holding boto3, botocore, s3transfer and jmespath with their
# .dist-info directories.
set -euo pipefail
SUITE=$(realpath "$1")
OUT=$(realpath -m "${2:-/var/tmp/s3-tests-shoal}")
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/s3-tests}
DATA=/var/tmp/shoal-s3-tests
rm -rf "$DATA"
"$SHOAL" up --detach --data "$DATA" --osds 3 > /tmp/shoal-s3-tests-up.log
# bucket logging's roll time as the suite expects it (5 s; its
# expected_object_roll_time): the gateway's section is the file's last
echo "rgw_bucket_logging_obj_roll_time = 5" >> "$DATA/shoal.conf"
kill "$(cat "$DATA/run/client.rgw.gateway.pid")"
while kill -0 "$(cat "$DATA/run/client.rgw.gateway.pid")" 2>/dev/null; do sleep 0.2; done
"$SHOAL" up --detach --data "$DATA" --osds 3 >> /tmp/shoal-s3-tests-up.log
export SHOAL_CONF=$DATA/shoal.conf
set -a; . "$DATA/s3.env"; set +a
# the template's four users, with fixed keys
conf=$(mktemp)
sed -e 's/<MAIN_ACCESS_KEY>/S3TMAIN0000000000001/; s/<MAIN_SECRET_KEY>/s3tmainsecret000000000000000000000000001/' \
    -e 's/<ALT_ACCESS_KEY>/S3TALT00000000000002/; s/<ALT_SECRET_KEY>/s3taltsecret0000000000000000000000000002/' \
    -e 's/<TENANT_ACCESS_KEY>/S3TTENANT00000000003/; s/<TENANT_SECRET_KEY>/s3ttenantsecret000000000000000000000003/' \
    -e 's/<IAM_ACCESS_KEY>/S3TIAM00000000000004/; s/<IAM_SECRET_KEY>/s3tiamsecret0000000000000000000000000004/' \
    "$REF/s3tests.conf.template" > "$conf"
"$SHOAL" user create testid --display-name "M. Tester" --email tester@ceph.com --access-key S3TMAIN0000000000001 --secret s3tmainsecret000000000000000000000000001 > /dev/null
"$SHOAL" user create 56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234 --display-name john.doe --email john.doe@example.com --access-key S3TALT00000000000002 --secret s3taltsecret0000000000000000000000000002 > /dev/null
"$SHOAL" user create --tenant testx 9876543210abcdef0123456789abcdef0123456789abcdef0123456789abcdef --display-name tenanteduser --email tenanteduser@example.com --access-key S3TTENANT00000000003 --secret s3ttenantsecret000000000000000000000003 > /dev/null
"$SHOAL" user create 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef --display-name youruseridhere --email s3@example.com --access-key S3TIAM00000000000004 --secret s3tiamsecret0000000000000000000000000004 > /dev/null
# the IAM user manages the others' user policies (radosgw-admin caps add --caps=user-policy=*)
"$SHOAL" user caps add 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef 'user-policy=*' > /dev/null
# BOTO_DISABLE_CRT: Debian's awscli brings python3-awscrt, whose presigner
# botocore then uses and which refuses the suite's out-of-range expiries on
# the client side; the radosgw reference ran without it.
BOTO_DISABLE_CRT=true S3TESTS_PYTHON=/usr/bin/python3 S3TESTS_REVIVE="$SHOAL up --detach --data $DATA" bash "$REF/run.sh" "$S3_ENDPOINT" "$SUITE" "$conf" "$OUT" || true
rm -f "$conf"
"$SHOAL" down --data "$DATA" > /dev/null
