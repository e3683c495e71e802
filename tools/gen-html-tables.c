// Measures libxml2 (the HTML parser of Apache's mod_proxy_html) for src/modules/filters/mod_proxy_html/html-tables.ts:
// gcc -o /tmp/g tools/gen-html-tables.c -I/usr/include/libxml2 -lxml2 && /tmp/g > out.txt && node tools/gen-html-tables.mjs
#include <stdio.h>
#include <string.h>
#include <libxml/HTMLparser.h>
static const char *els[] = {"a","abbr","acronym","address","applet","area","b","base","basefont","bdo","big","blockquote","body","br","button","caption","center","cite","code","col","colgroup","dd","del","dfn","dir","div","dl","dt","em","embed","fieldset","font","form","frame","frameset","h1","h2","h3","h4","h5","h6","head","hr","html","i","iframe","img","input","ins","isindex","kbd","label","legend","li","link","map","menu","meta","noframes","noscript","object","ol","optgroup","option","p","param","pre","q","s","samp","script","select","small","span","strike","strong","style","sub","sup","table","tbody","td","textarea","tfoot","th","thead","title","tr","tt","u","ul","var",NULL};
static const char *atts[] = {"abbr","accept-charset","accept","accesskey","action","align","alink","alt","archive","axis","background","bgcolor","border","cellpadding","cellspacing","char","charoff","charset","checked","cite","class","classid","clear","code","codebase","codetype","color","cols","colspan","compact","content","coords","data","datetime","declare","defer","dir","disabled","enctype","face","for","frame","frameborder","headers","height","href","hreflang","hspace","http-equiv","id","ismap","label","lang","language","link","longdesc","marginheight","marginwidth","maxlength","media","method","multiple","name","nohref","noresize","noshade","nowrap","object","onblur","onchange","onclick","ondblclick","onfocus","onkeydown","onkeypress","onkeyup","onload","onmousedown","onmousemove","onmouseout","onmouseover","onmouseup","onreset","onselect","onsubmit","onunload","profile","prompt","readonly","rel","rev","rows","rowspan","rules","scheme","scope","scrolling","selected","shape","size","span","src","standby","start","style","summary","tabindex","target","text","title","type","usemap","valign","value","valuetype","version","vlink","vspace","width","pluginspage","pluginurl","hidden","autostart","loop","palette","units","xml:lang","xmlns","xml:space","pluginspace","event","datapagesize",NULL};
int main(void){
  int i,j;
  printf("ELEMENTS\n");
  for(i=0;els[i];i++){const htmlElemDesc*d=htmlTagLookup((const xmlChar*)els[i]);
    if(!d){printf("MISSING %s\n",els[i]);continue;}
    printf("%s empty=%d depr=%d endTag=%d startTag=%d req=",d->name,d->empty,d->depr,d->endTag,d->startTag);
    int n=0; if(d->attrs_req) for(const char**p=d->attrs_req;*p;p++){printf("%s%s",n?",":"",*p);n++;}
    printf(" allowed=");n=0;
    for(j=0;atts[j];j++){ if(htmlAttrAllowed(d,(const xmlChar*)atts[j],0)!=HTML_INVALID){printf("%s%s",n?",":"",atts[j]);n++;}}
    printf(" depr=");n=0;
    for(j=0;atts[j];j++){ if(htmlAttrAllowed(d,(const xmlChar*)atts[j],1)==HTML_DEPRECATED){printf("%s%s",n?",":"",atts[j]);n++;}}
    printf("\n");
    /* check attrs not in my list */
    if(d->attrs_opt) for(const char**p=d->attrs_opt;*p;p++){int f=0;for(j=0;atts[j];j++)if(!strcmp(atts[j],*p))f=1; if(!f)printf("UNLISTED opt %s %s\n",d->name,*p);}
    if(d->attrs_req) for(const char**p=d->attrs_req;*p;p++){int f=0;for(j=0;atts[j];j++)if(!strcmp(atts[j],*p))f=1; if(!f)printf("UNLISTED req %s %s\n",d->name,*p);}
  }
  printf("ENTITIES\n");
  for(unsigned v=1;v<0x110000;v++){const htmlEntityDesc*e=htmlEntityValueLookup(v); if(e&&e->value==v)printf("%s %u\n",e->name,v);}
  return 0;
}
