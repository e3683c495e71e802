// Writes each document (separated by \x01 on stdin) as mod_proxy_html would without rules, parsed by
// libxml2's HTML push parser with mod_proxy_html's options: the reference for compare.mjs.
// gcc -O -o /tmp/libxml2-sax tools/proxy-html-difftest/libxml2-sax.c -I/usr/include/libxml2 -lxml2
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/HTMLparser.h>
static void esc(const char *s, int n){ for(int i=0;i<n;i++){ char c=s[i]; if(c=='&')fputs("&amp;",stdout); else if(c=='<')fputs("&lt;",stdout); else if(c=='>')fputs("&gt;",stdout); else if(c=='"')fputs("&quot;",stdout); else putchar(c);} }
static void st(void*c,const xmlChar*n,const xmlChar**a){ printf("<%s",n); if(a) for(;*a;a+=2){ if(a[1]){printf(" %s=\"",a[0]); esc((const char*)a[1],strlen((const char*)a[1])); putchar('"');} else printf(" %s",a[0]);} putchar('>'); }
static void en(void*c,const xmlChar*n){ const htmlElemDesc*d=htmlTagLookup(n); if(!d||!d->empty) printf("</%s>",n); }
static void ch(void*c,const xmlChar*s,int n){ esc((const char*)s,n); }
static void cm(void*c,const xmlChar*s){ printf("<!--%s-->",s); }
static void cd(void*c,const xmlChar*s,int n){ fwrite(s,1,n,stdout); }
int main(void){
  static char buf[1<<20]; size_t n=fread(buf,1,sizeof buf,stdin); size_t start=0;
  htmlSAXHandler sax; memset(&sax,0,sizeof sax); sax.startElement=st; sax.endElement=en; sax.characters=ch; sax.comment=cm; sax.cdataBlock=cd;
  for(size_t i=0;i<=n;i++){ if(i==n||buf[i]=='\x01'){ size_t len=i-start; char*d=buf+start;
      if(len>=4){ htmlParserCtxtPtr p=htmlCreatePushParserCtxt(&sax,NULL,d,4,NULL,XML_CHAR_ENCODING_UTF8);
        xmlCtxtUseOptions(p, XML_PARSE_RECOVER|XML_PARSE_NONET|XML_PARSE_NOBLANKS|XML_PARSE_NOERROR|XML_PARSE_NOWARNING);
        htmlParseChunk(p,d+4,len-4,0); htmlParseChunk(p,"",0,1); htmlFreeParserCtxt(p);}
      else fwrite(d,1,len,stdout);
      putchar('\x01'); start=i+1; } }
  return 0; }
