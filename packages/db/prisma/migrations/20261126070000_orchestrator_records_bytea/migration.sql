-- Records payloads become the binary envelope (`SharedDataKey.sealBytes` in @switchboard/crypto) in a bytea
-- column: a third fewer bytes than the base64url text, and nothing to split or decode on each read.
--
-- A text `sb2` envelope (`sb2.<ver>.<wrapNonce>.<wrappedKey>.<wrapTag>.<nonce>.<ciphertext>.<tag>`) is
-- converted to the same fields in binary: 0x02, the version (int4, big-endian), wrap nonce, wrapped key,
-- wrap tag, nonce, tag, ciphertext. Only a value whose every part has the exact length is converted; any
-- other value is kept as its text's bytes, which the reader still opens as a text envelope (or refuses, as
-- it did before): nothing is guessed, nothing lost.
CREATE FUNCTION pg_temp.sb_b64url(part text) RETURNS bytea LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT decode(rpad(translate(part, '-_', '+/'), (length(part) + 3) / 4 * 4, '='), 'base64')
$$;

ALTER TABLE "orchestrator"."records" ALTER COLUMN "payload" SET DATA TYPE BYTEA USING (
  CASE
    WHEN "payload" ~ '^sb2\.[1-9][0-9]{0,8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{22}$'
    THEN '\x02'::bytea
      || int4send(split_part("payload", '.', 2)::int)
      || pg_temp.sb_b64url(split_part("payload", '.', 3))
      || pg_temp.sb_b64url(split_part("payload", '.', 4))
      || pg_temp.sb_b64url(split_part("payload", '.', 5))
      || pg_temp.sb_b64url(split_part("payload", '.', 6))
      || pg_temp.sb_b64url(split_part("payload", '.', 8))
      || pg_temp.sb_b64url(split_part("payload", '.', 7))
    ELSE convert_to("payload", 'UTF8')
  END
);
