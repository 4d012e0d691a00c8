/* The plexus CLI's clean text stream (tools/text_clean.c): what reaches the
 * terminal of untrusted text, written whole and cut into single bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "text_clean.h"

/* Writes `n` bytes of `in` through a clean stream (in one fwrite, or one
 * byte per write with no buffering) and returns what reached the raw
 * stream (static buffer). */
static const char *cleaned(const char *in, size_t n, bool keep_cr, bool bytewise) {
    static char out[1024];
    FILE *raw = tmpfile();
    cr_assert(not(zero(ptr, raw)));
    FILE *f = text_clean_open(raw, keep_cr);
    cr_assert(not(zero(ptr, f)));
    if (bytewise) {
        cr_assert(eq(int, setvbuf(f, NULL, _IONBF, 0), 0));
        for (size_t i = 0; i < n; i++) {
            cr_assert(eq(sz, fwrite(in + i, 1, 1, f), 1));
        }
    } else {
        cr_assert(eq(sz, fwrite(in, 1, n, f), n));
    }
    cr_assert(eq(int, fclose(f), 0));
    rewind(raw);
    size_t got = fread(out, 1, sizeof out - 1, raw);
    out[got] = '\0';
    fclose(raw);
    return out;
}

static void expect(const char *in, bool keep_cr, const char *want) {
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        const char *got = cleaned(in, strlen(in), keep_cr, bytewise);
        cr_assert(eq(str, (char *)got, (char *)want), "bytewise %d", bytewise);
    }
}

Test(text_clean, control_characters_are_escaped) {
    expect("a\x1b[2Jb\n\tc\x7f\x01", false, "a\\x1b[2Jb\n\tc\\x7f\\x01");
    expect("50%\r", false, "50%\\x0d");
    expect("50%\r", true, "50%\r");
    /* C1 controls, as UTF-8 (U+009B is CSI) */
    expect("x\xc2\x9by", false, "x\\xc2\\x9by");
}

Test(text_clean, valid_utf8_passes_whole_even_cut) {
    expect("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", false,
           "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

Test(text_clean, invalid_utf8_bytes_are_escaped) {
    expect("a\xff\xfe", false, "a\\xff\\xfe");
    /* overlong '/', a surrogate, past U+10FFFF, a cut sequence at the end */
    expect("\xc0\xaf", false, "\\xc0\\xaf");
    expect("\xed\xa0\x80", false, "\\xed\\xa0\\x80");
    expect("\xf4\x90\x80\x80", false, "\\xf4\\x90\\x80\\x80");
    expect("ok\xe2\x82", false, "ok\\xe2\\x82");
    /* a sequence start followed by ASCII */
    expect("\xe2x", false, "\\xe2x");
}

Test(text_clean, utf8_sequence_lengths) {
    uint32_t cp;
    bool incomplete;
    cr_assert(eq(sz, utf8_sequence((const unsigned char *)"\xe2\x82\xac", 3, &cp, &incomplete), 3));
    cr_assert(eq(u32, cp, 0x20ac));
    cr_assert(eq(sz, utf8_sequence((const unsigned char *)"\xe2\x82", 2, &cp, &incomplete), 0));
    cr_assert(incomplete);
    cr_assert(eq(sz, utf8_sequence((const unsigned char *)"\x80", 1, &cp, &incomplete), 0));
    cr_assert(not(incomplete));
}
