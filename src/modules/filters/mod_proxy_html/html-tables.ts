// The HTML 4.01 element and entity tables the HTML parser and mod_proxy_html consult, as
// libxml2 2.9.14 (the library Apache's mod_proxy_html uses) answers them: measured with its
// htmlTagLookup, htmlAttrAllowed and htmlEntityValueLookup (tools/gen-html-tables.c writes the
// listing this file was built from). Facts of the HTML 4.01 DTD; do not edit by hand.

const A0 = "accesskey charset class coords dir href hreflang id lang name onblur onclick ondblclick onfocus onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup rel rev shape style tabindex title type";
const A1 = "class dir id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A2 = "";
const A3 = "accesskey alt coords href nohref onblur onfocus shape tabindex";
const A4 = "href";
const A5 = "class dir id lang style title";
const A6 = "cite class dir id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A7 = "class dir id lang onclick ondblclick onkeydown onkeypress onkeyup onload onmousedown onmouseout onmouseover onmouseup onunload style title";
const A8 = "class id style title";
const A9 = "accesskey class dir disabled id lang name onblur onclick ondblclick onfocus onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style tabindex title type value";
const A10 = "align char charoff class dir id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup span style title valign width";
const A11 = "cite class datetime dir id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A12 = "align alt border class code codebase frameborder height hspace id name src style title type vspace width pluginurl hidden palette units pluginspace";
const A13 = "accept-charset accept action class dir enctype id lang method name onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup onreset onsubmit style title";
const A14 = "dir lang profile";
const A15 = "dir lang";
const A16 = "alt class dir height id ismap lang longdesc name onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup src style title usemap width";
const A17 = "accept accesskey alt checked class dir disabled id ismap lang maxlength name onblur onchange onclick ondblclick onfocus onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup onselect readonly size src style tabindex title type usemap value";
const A18 = "accesskey class dir for id lang onblur onclick ondblclick onfocus onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A19 = "accesskey class dir id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A20 = "charset class dir href hreflang id lang media onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup rel rev style title type";
const A21 = "class dir id lang name onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A22 = "charset content dir http-equiv lang name scheme";
const A23 = "archive class classid codebase codetype data declare dir height id lang name onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup standby style tabindex title type usemap width";
const A24 = "class dir disabled id label lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title";
const A25 = "class dir disabled id label lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup selected style title value";
const A26 = "id name type value valuetype";
const A27 = "charset defer for src type event";
const A28 = "class dir disabled id lang multiple name onblur onchange onclick ondblclick onfocus onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup size style tabindex title";
const A29 = "dir lang media title type";
const A30 = "border cellpadding cellspacing class dir frame id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup rules style summary title width datapagesize";
const A31 = "align char charoff class dir id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup style title valign";
const A32 = "abbr align axis char charoff class colspan dir headers id lang onclick ondblclick onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup rowspan scope style title valign";
const A33 = "accesskey class cols dir disabled id lang name onblur onchange onclick ondblclick onfocus onkeydown onkeypress onkeyup onmousedown onmouseout onmouseover onmouseup onselect readonly rows style tabindex title";

/** name: [empty, deprecated, allowed attributes (required ones included), required attributes] */
export const ELEMENT_ROWS: Readonly<Record<string, readonly [0 | 1, 0 | 1, string, string]>> = {
  "a": [0, 0, A0, ''],
  "abbr": [0, 0, A1, ''],
  "acronym": [0, 0, A1, ''],
  "address": [0, 0, A1, ''],
  "applet": [0, 1, A2, ''],
  "area": [1, 0, A3, "alt"],
  "b": [0, 0, A1, ''],
  "base": [1, 0, A4, "href"],
  "basefont": [1, 1, A2, ''],
  "bdo": [0, 0, A5, "dir"],
  "big": [0, 0, A1, ''],
  "blockquote": [0, 0, A6, ''],
  "body": [0, 0, A7, ''],
  "br": [1, 0, A8, ''],
  "button": [0, 0, A9, ''],
  "caption": [0, 0, A1, ''],
  "center": [0, 1, A2, ''],
  "cite": [0, 0, A1, ''],
  "code": [0, 0, A1, ''],
  "col": [1, 0, A10, ''],
  "colgroup": [0, 0, A10, ''],
  "dd": [0, 0, A1, ''],
  "del": [0, 0, A11, ''],
  "dfn": [0, 0, A1, ''],
  "dir": [0, 1, A2, ''],
  "div": [0, 0, A1, ''],
  "dl": [0, 0, A1, ''],
  "dt": [0, 0, A1, ''],
  "em": [0, 0, A1, ''],
  "embed": [0, 1, A12, ''],
  "fieldset": [0, 0, A1, ''],
  "font": [0, 1, A2, ''],
  "form": [0, 0, A13, "action"],
  "frame": [1, 0, A2, ''],
  "frameset": [0, 0, A2, ''],
  "h1": [0, 0, A1, ''],
  "h2": [0, 0, A1, ''],
  "h3": [0, 0, A1, ''],
  "h4": [0, 0, A1, ''],
  "h5": [0, 0, A1, ''],
  "h6": [0, 0, A1, ''],
  "head": [0, 0, A14, ''],
  "hr": [1, 0, A1, ''],
  "html": [0, 0, A15, ''],
  "i": [0, 0, A1, ''],
  "iframe": [0, 0, A2, ''],
  "img": [1, 0, A16, "src alt"],
  "input": [1, 0, A17, ''],
  "ins": [0, 0, A11, ''],
  "isindex": [1, 1, A2, ''],
  "kbd": [0, 0, A1, ''],
  "label": [0, 0, A18, ''],
  "legend": [0, 0, A19, ''],
  "li": [0, 0, A1, ''],
  "link": [1, 0, A20, ''],
  "map": [0, 0, A21, "name"],
  "menu": [0, 1, A2, ''],
  "meta": [1, 0, A22, "content"],
  "noframes": [0, 0, A1, ''],
  "noscript": [0, 0, A1, ''],
  "object": [0, 0, A23, ''],
  "ol": [0, 0, A1, ''],
  "optgroup": [0, 0, A24, "label"],
  "option": [0, 0, A25, ''],
  "p": [0, 0, A1, ''],
  "param": [1, 0, A26, "name"],
  "pre": [0, 0, A1, ''],
  "q": [0, 0, A6, ''],
  "s": [0, 1, A2, ''],
  "samp": [0, 0, A1, ''],
  "script": [0, 0, A27, "type"],
  "select": [0, 0, A28, ''],
  "small": [0, 0, A1, ''],
  "span": [0, 0, A1, ''],
  "strike": [0, 1, A2, ''],
  "strong": [0, 0, A1, ''],
  "style": [0, 0, A29, "type"],
  "sub": [0, 0, A1, ''],
  "sup": [0, 0, A1, ''],
  "table": [0, 0, A30, ''],
  "tbody": [0, 0, A31, ''],
  "td": [0, 0, A32, ''],
  "textarea": [0, 0, A33, "rows cols"],
  "tfoot": [0, 0, A31, ''],
  "th": [0, 0, A32, ''],
  "thead": [0, 0, A31, ''],
  "title": [0, 0, A15, ''],
  "tr": [0, 0, A31, ''],
  "tt": [0, 0, A1, ''],
  "u": [0, 1, A2, ''],
  "ul": [0, 0, A1, ''],
  "var": [0, 0, A1, ''],
};

/** The entities libxml2 knows in HTML, name and code point. */
export const ENTITY_ROWS = "quot 34 amp 38 apos 39 lt 60 gt 62 nbsp 160 iexcl 161 cent 162 pound 163 curren 164 yen 165 brvbar 166 sect 167 uml 168 copy 169 ordf 170 laquo 171 not 172 shy 173 reg 174 macr 175 deg 176 plusmn 177 sup2 178 sup3 179 acute 180 micro 181 para 182 middot 183 cedil 184 sup1 185 ordm 186 raquo 187 frac14 188 frac12 189 frac34 190 iquest 191 Agrave 192 Aacute 193 Acirc 194 Atilde 195 Auml 196 Aring 197 AElig 198 Ccedil 199 Egrave 200 Eacute 201 Ecirc 202 Euml 203 Igrave 204 Iacute 205 Icirc 206 Iuml 207 ETH 208 Ntilde 209 Ograve 210 Oacute 211 Ocirc 212 Otilde 213 Ouml 214 times 215 Oslash 216 Ugrave 217 Uacute 218 Ucirc 219 Uuml 220 Yacute 221 THORN 222 szlig 223 agrave 224 aacute 225 acirc 226 atilde 227 auml 228 aring 229 aelig 230 ccedil 231 egrave 232 eacute 233 ecirc 234 euml 235 igrave 236 iacute 237 icirc 238 iuml 239 eth 240 ntilde 241 ograve 242 oacute 243 ocirc 244 otilde 245 ouml 246 divide 247 oslash 248 ugrave 249 uacute 250 ucirc 251 uuml 252 yacute 253 thorn 254 yuml 255 OElig 338 oelig 339 Scaron 352 scaron 353 Yuml 376 fnof 402 circ 710 tilde 732 Alpha 913 Beta 914 Gamma 915 Delta 916 Epsilon 917 Zeta 918 Eta 919 Theta 920 Iota 921 Kappa 922 Lambda 923 Mu 924 Nu 925 Xi 926 Omicron 927 Pi 928 Rho 929 Sigma 931 Tau 932 Upsilon 933 Phi 934 Chi 935 Psi 936 Omega 937 alpha 945 beta 946 gamma 947 delta 948 epsilon 949 zeta 950 eta 951 theta 952 iota 953 kappa 954 lambda 955 mu 956 nu 957 xi 958 omicron 959 pi 960 rho 961 sigmaf 962 sigma 963 tau 964 upsilon 965 phi 966 chi 967 psi 968 omega 969 thetasym 977 upsih 978 piv 982 ensp 8194 emsp 8195 thinsp 8201 zwnj 8204 zwj 8205 lrm 8206 rlm 8207 ndash 8211 mdash 8212 lsquo 8216 rsquo 8217 sbquo 8218 ldquo 8220 rdquo 8221 bdquo 8222 dagger 8224 Dagger 8225 bull 8226 hellip 8230 permil 8240 prime 8242 Prime 8243 lsaquo 8249 rsaquo 8250 oline 8254 frasl 8260 euro 8364 image 8465 weierp 8472 real 8476 trade 8482 alefsym 8501 larr 8592 uarr 8593 rarr 8594 darr 8595 harr 8596 crarr 8629 lArr 8656 uArr 8657 rArr 8658 dArr 8659 hArr 8660 forall 8704 part 8706 exist 8707 empty 8709 nabla 8711 isin 8712 notin 8713 ni 8715 prod 8719 sum 8721 minus 8722 lowast 8727 radic 8730 prop 8733 infin 8734 ang 8736 and 8743 or 8744 cap 8745 cup 8746 int 8747 there4 8756 sim 8764 cong 8773 asymp 8776 ne 8800 equiv 8801 le 8804 ge 8805 sub 8834 sup 8835 nsub 8836 sube 8838 supe 8839 oplus 8853 otimes 8855 perp 8869 sdot 8901 lceil 8968 rceil 8969 lfloor 8970 rfloor 8971 lang 9001 rang 9002 loz 9674 spades 9824 clubs 9827 hearts 9829 diams 9830";
